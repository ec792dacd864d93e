/** Decoding a Pub/Sub message delivered to a function as a CloudEvent (or pulled by the relay). */
import { z } from 'zod';
import { unsafeJson } from '../domain/text.js';
import { ValidationError } from '../errors.js';

/** A decoded message: its id, publish time, attributes, and its JSON body (not yet validated). */
export interface BusMessage {
  id: string;
  publishTime: number;
  attributes: Record<string, string>;
  /** Raw text of the body exactly as received: relay signatures are checked over it. */
  text: string;
  /** The JSON body; `undefined` when the body is absent or is not JSON. */
  json: unknown;
  /** Why the body could not be decoded, when it could not. */
  decodeError?: string;
  /** The field path `decodeError` is about, when it is about one (`metadata.labels.__proto__`). */
  decodeField?: string;
}

const cloudEventData = z.object({
  message: z.object({
    data: z.string().optional(),
    attributes: z.record(z.string(), z.string()).optional(),
    messageId: z.string().optional(),
    message_id: z.string().optional(),
    publishTime: z.string().optional(),
    publish_time: z.string().optional(),
  }),
});

/**
 * @param event - the CloudEvent functions-framework hands a Pub/Sub-triggered function
 * @throws ValidationError when the Pub/Sub envelope itself is malformed
 */
export function decodeCloudEvent(event: { id?: string; time?: string; data?: unknown }): BusMessage {
  const envelope = cloudEventData.safeParse(event.data);
  if (!envelope.success) throw new ValidationError('(message)', 'not a Pub/Sub message envelope');
  const m = envelope.data.message;
  const id = m.messageId ?? m.message_id ?? event.id ?? '';
  const published = Date.parse(m.publishTime ?? m.publish_time ?? event.time ?? '');
  const text = m.data ? Buffer.from(m.data, 'base64').toString('utf8') : '';
  return decodeBody(id, Number.isNaN(published) ? Date.now() : published, m.attributes ?? {}, text);
}

/** Builds a BusMessage from the parts (the relay's pull subscriber has them separately). */
export function decodeBody(
  id: string,
  publishTime: number,
  attributes: Record<string, string>,
  text: string,
): BusMessage {
  const message: BusMessage = { id, publishTime, attributes, text, json: undefined };
  if (text.trim() === '') return message;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    message.decodeError = `body is not valid JSON: ${(err as Error).message}`;
    return message;
  }
  const unsafe = unsafeJson(json);
  if (unsafe) {
    message.decodeError = unsafe.reason;
    message.decodeField = unsafe.field;
  } else message.json = json;
  return message;
}
