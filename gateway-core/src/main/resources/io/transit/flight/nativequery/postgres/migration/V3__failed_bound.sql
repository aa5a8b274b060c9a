-- The exceeded bound of a budget failure, for its diagnostic's exact budgets
-- (docs/diagnostic-v1.md, "Shared-contract terms").
ALTER TABLE queries ADD COLUMN failed_bound TEXT NOT NULL DEFAULT '';
