/** Host names as `URL#hostname` gives them. */

/** Whether a URL's hostname names this machine: `localhost`, 127.0.0.0/8 or `[::1]`. */
export function isLoopbackHost(hostname: string): boolean {
  return /^(127\.\d+\.\d+\.\d+|\[::1\]|localhost)$/.test(hostname);
}
