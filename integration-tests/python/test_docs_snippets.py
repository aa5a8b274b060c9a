"""Every fenced ``python`` block of docs/*.md runs, on its own, against a demo deployment.

Snippets are written for the documented demo deployment (``scripts/gateway demo``); the test
replaces exactly its two defaults — the URI ``grpc://127.0.0.1:31337`` and the state directory
``.state/demo`` — with the test daemon's (docs/python-client.md, "Snippets are tested"). Each
snippet runs in a fresh interpreter of this venv (which has the transit_flight package), in an
empty working directory, so it can rely on nothing but what it says.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
DEMO_URI = "grpc://127.0.0.1:31337"
DEMO_STATE = ".state/demo"
FENCE = re.compile(r"^( *)```python\n(.*?)^\1```", re.M | re.S)


def snippets():
    for doc in sorted(DOCS.glob("*.md")):
        for i, m in enumerate(FENCE.finditer(doc.read_text())):
            indent = len(m.group(1))
            # Blocks inside list items are indented with the item; the code is not.
            code = "".join(line[indent:] for line in m.group(2).splitlines(keepends=True))
            line = doc.read_text().count("\n", 0, m.start()) + 1
            yield pytest.param(code, id=f"{doc.name}:{line}")


SNIPPETS = list(snippets())


def test_the_docs_have_python_snippets():
    names = {p.id.split(":")[0] for p in SNIPPETS}
    assert {"quickstart.md", "clients.md", "python-client.md"} <= names, names


@pytest.mark.parametrize("code", SNIPPETS)
def test_snippet_runs(code, gateway, tmp_path):
    code = code.replace(DEMO_URI, gateway.uri).replace(DEMO_STATE, str(gateway.state_dir))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"snippet failed:\n{code}\n--- stderr:\n{run.stderr[-3000:]}"
    # Only a snippet that says so may warn (adbc_clone cannot pass autocommit=True).
    if "adbc_clone" not in code:
        assert "Warning" not in run.stderr, run.stderr
