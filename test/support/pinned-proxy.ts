/**
 * A fleet proxy's TLS listener as a client that cannot pin a fingerprint uses it: the certificate
 * it presents, fetched pinned to the fingerprint discovery published, becomes the client's only
 * trust anchor for the proxy (curl before 8.10 ignores `--proxy-pinnedpubkey`: curl/curl#14438).
 */
import { X509Certificate } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { CERTIFICATE_NAME } from '../../shared/providers/stunnel.js';
import { connectPinned } from '../../shared/tls/pinned.js';

/** The certificate the listener at `host:port` presents; rejects one whose fingerprint is not `fingerprint`. */
export function presentedCertificate(host: string, port: number, fingerprint?: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) =>
    connectPinned({ host, port, fingerprint, timeoutMs: 10_000 }, (err, socket) => {
      const raw = err ? undefined : socket.getPeerCertificate().raw;
      socket.destroy();
      if (raw) resolve(new X509Certificate(raw));
      else reject(err ?? new Error(`${host}:${port} presented no certificate`));
    }),
  );
}

/**
 * curl's arguments for an `https://` proxy URL trusted by its pinned certificate alone: the
 * certificate written to `pemFile` is the CA, and the proxy is dialled by the certificate's name
 * resolved to its address (verification on: another certificate fails with curl's exit 60).
 */
export async function pinnedCurlArgs(
  proxy: { host: string; port: number; auth: string },
  certificate: X509Certificate,
  pemFile: string,
): Promise<string[]> {
  await writeFile(pemFile, certificate.toString());
  return [
    '-x',
    `https://${proxy.auth}@${CERTIFICATE_NAME}:${proxy.port}`,
    '--resolve',
    `${CERTIFICATE_NAME}:${proxy.port}:${proxy.host}`,
    '--proxy-cacert',
    pemFile,
  ];
}
