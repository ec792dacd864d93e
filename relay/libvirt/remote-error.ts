/** Decoding of libvirt's `remote_error`, the body of every ERROR reply and ERROR stream packet. */
import type { RemoteErrorFields } from './errors.js';
import { XdrReader } from './xdr.js';

const UUID_BYTES = 16;

/**
 * Decodes `remote_error` { code, domain, message?, level, dom?, str1?, str2?, str3?, int1, int2, net? }.
 * @throws LibvirtProtocolError when the body does not match the layout
 */
export function decodeRemoteError(body: Buffer): RemoteErrorFields {
  const reader = new XdrReader(body);
  const code = reader.int();
  const domain = reader.int();
  const message = reader.optString() ?? '(no message)';
  const level = reader.int();
  reader.optional((r) => [r.string(), r.fixedOpaque(UUID_BYTES), r.int()]);
  for (let i = 0; i < 3; i++) reader.optString();
  reader.int();
  reader.int();
  reader.optional((r) => [r.string(), r.fixedOpaque(UUID_BYTES)]);
  reader.end();
  return { code, domain, message, level };
}
