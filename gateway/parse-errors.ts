/** Requests Node's HTTP parser refuses: answered with a status and the parser's reason, never a silent close. */
import type http from 'node:http';
import type { Duplex } from 'node:stream';

/** A parser error as Node's `clientError` event hands it over (`HPE_*` codes from llhttp). */
export type ParseError = Error & { code?: string; reason?: string };

/**
 * Answers what the parser refused, then closes: 431 when the head is too large (RFC 6585 §5),
 * 400 otherwise (RFC 9110 §15.5.1). Nothing is answered when the client is gone or a response to
 * the request has already started (writing then would corrupt it): the connection just closes.
 *
 * @param started - the response of the request being read on this socket, if one was dispatched
 */
export function answerParseError(err: ParseError, socket: Duplex, started: http.ServerResponse | undefined): void {
  if (err.code === 'ECONNRESET' || !socket.writable || started?.headersSent) {
    socket.destroy();
    return;
  }
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : '400 Bad Request';
  const why = err.reason ?? err.message;
  const body = `egress gateway: not a valid HTTP/1.1 proxy request: ${why}${err.code ? ` (${err.code})` : ''}\n`;
  socket.end(
    `HTTP/1.1 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
