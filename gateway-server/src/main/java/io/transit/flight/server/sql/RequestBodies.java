package io.transit.flight.server.sql;

import com.google.protobuf.Any;
import com.google.protobuf.Descriptors;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.arrow.flight.Action;
import org.apache.arrow.flight.FlightConstants;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.impl.Flight;
import org.apache.arrow.flight.sql.impl.FlightSql;

/**
 * The protobuf inside a request message (a descriptor's command, an action's body) parsed with
 * one rule: what does not parse — truncated varint, wrong wire type, invalid UTF-8 in a string,
 * recursion past protobuf's limit — is INVALID_ARGUMENT {@code flight.invalid_command} with a
 * fixed message. The parser's own text never reaches the caller or the log: it is the caller's
 * fault, not the gateway's. Stateless, any thread.
 */
final class RequestBodies {
  private RequestBodies() {}

  /** The descriptor's command as an {@code Any}; path descriptors are outside the profile. */
  static Any command(FlightDescriptor descriptor) {
    if (!descriptor.isCommand()) {
      throw GatewayException.of(Cause.UNSUPPORTED, "flight.path_descriptor",
          "path descriptors are not supported; send a Flight SQL command");
    }
    try {
      return Any.parseFrom(descriptor.getCommand());
    } catch (InvalidProtocolBufferException | RuntimeException e) {
      throw invalid("descriptor command is not a valid protobuf Any");
    }
  }

  /** The full names of Flight SQL's command messages, known to Arrow's protocol descriptor. */
  private static final Map<String, Descriptors.Descriptor> FLIGHT_SQL_COMMANDS =
      FlightSql.getDescriptor().getMessageTypes().stream()
          .filter(t -> t.getName().startsWith("Command"))
          .collect(Collectors.toUnmodifiableMap(Descriptors.Descriptor::getFullName, t -> t));

  /**
   * Every command other than a statement must be a Flight SQL command whose value parses as
   * that command, before anything else is decided for it: a catalog command is then served, any
   * other answered UNIMPLEMENTED after policy. Any other type, an empty one included, is not a
   * command of a known type; a value that does not parse is no command either, whichever call
   * carries it (GetSchema and GetFlightInfo answer it alike).
   *
   * @return the command's Flight SQL name ({@code CommandGetXdbcTypeInfo}): what an answer may
   *     name, never the caller's type URL, whose prefix before the last {@code /} is any text
   */
  static String requireFlightSqlCommand(Any command) {
    String url = command.getTypeUrl();
    Descriptors.Descriptor type = FLIGHT_SQL_COMMANDS.get(url.substring(url.lastIndexOf('/') + 1));
    if (type == null) {
      throw invalid("the descriptor command is not a Flight SQL command");
    }
    try {
      DynamicMessage.parseFrom(type, command.getValue());
    } catch (InvalidProtocolBufferException | RuntimeException e) {
      throw invalid("the command's value is not a valid " + type.getName());
    }
    return type.getName();
  }

  /** {@code command}'s value as {@code type}; the caller checked {@code command.is(type)}. */
  static <T extends Message> T unpack(Any command, Class<T> type) {
    try {
      return command.unpack(type);
    } catch (InvalidProtocolBufferException | RuntimeException e) {
      throw invalid("the command's value is not a valid " + type.getSimpleName());
    }
  }

  /**
   * Parses a session action's body before Arrow does: Arrow answers a body it cannot parse
   * INTERNAL with the parser's text.
   */
  static void checkSessionAction(Action action) {
    String type = action.getType();
    byte[] body = action.getBody();
    try {
      if (FlightConstants.GET_SESSION_OPTIONS.getType().equals(type)) {
        Flight.GetSessionOptionsRequest.parseFrom(body);
      } else if (FlightConstants.SET_SESSION_OPTIONS.getType().equals(type)) {
        // A value without a variant (Flight's convention for "clear this option"; an unknown
        // variant parses the same) is one Arrow represents as empty: refused by name like any.
        Flight.SetSessionOptionsRequest.parseFrom(body);
      } else if (FlightConstants.CLOSE_SESSION.getType().equals(type)) {
        Flight.CloseSessionRequest.parseFrom(body);
      }
    } catch (InvalidProtocolBufferException | RuntimeException e) {
      if (e instanceof GatewayException g) {
        throw g;
      }
      throw invalid("the action body is not a valid " + type + " request");
    }
  }

  private static GatewayException invalid(String message) {
    return GatewayException.of(Cause.INVALID_PROTOBUF, "flight.invalid_command", message);
  }
}
