/** Host names as `URL#hostname` gives them, and plain loopback addresses. */
import { isIP } from 'node:net';

/** Whether a URL's hostname names this machine: `localhost`, 127.0.0.0/8 or `[::1]`. */
export function isLoopbackHost(hostname: string): boolean {
  return /^(127\.\d+\.\d+\.\d+|\[::1\]|localhost)$/.test(hostname);
}

/** Whether `address` is a loopback IP address written plainly (`127.x.y.z` or `::1`; no names). */
export function isLoopbackAddress(address: string): boolean {
  return isIP(address) !== 0 && isLoopbackHost(address === '::1' ? '[::1]' : address);
}
