/** Field schemas the backends' options (and the relay configuration around them) share; errors say what is expected. */
import { isIP } from 'node:net';
import path from 'node:path';
import { z } from 'zod';

export const port = z.number().int().min(1).max(65535);
export const seconds = z.number().positive();
export const absolutePath = z
  .string()
  .max(4096)
  .refine((s) => path.isAbsolute(s), 'must be an absolute path on the host');
export const ipAddress = z.string().refine((s) => isIP(s) !== 0, 'must be an IPv4 or IPv6 address');
