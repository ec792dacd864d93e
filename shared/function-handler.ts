/** What every function shares around its handler: telemetry started once, the runtime, a span per invocation. */
import { propagation, ROOT_CONTEXT, SpanKind } from '@opentelemetry/api';
import type { BusMessage } from './bus/message.js';
import { createLogger } from './logger.js';
import { getRuntime, type Runtime } from './runtime.js';
import { loadTelemetryConfig } from './telemetry/config.js';
import { traceInvocation, type CloudEventLike } from './telemetry/invocation.js';
import { startTelemetry, type Telemetry } from './telemetry/setup.js';
import { inSpan } from './telemetry/spans.js';

let telemetry: Promise<Telemetry | undefined> | undefined;
let invocations = 0;

/**
 * Starts this process's telemetry (once; begun when the function registers, so it loads while the
 * framework starts listening). A bad telemetry setting is logged and leaves telemetry off: it
 * must not stop the function from working.
 */
function functionTelemetry(name: string): Promise<Telemetry | undefined> {
  telemetry ??= (async () => {
    const logger = createLogger({ base: { function: name } });
    try {
      return await startTelemetry({ service: `egress-${name}`, config: loadTelemetryConfig(process.env), logger });
    } catch (err) {
      logger.error('telemetry could not start; running without it', { error: err });
      return undefined;
    }
  })();
  return telemetry;
}

/** Runs one invocation with telemetry ready, and exports its spans before it ends (Cloud Run may freeze us after). */
async function invoke<T>(name: string, run: (rt: Runtime) => Promise<T>): Promise<T> {
  const ready = await functionTelemetry(name);
  try {
    return await run(getRuntime(name));
  } finally {
    if (ready?.config.mode === 'gcp') await ready.flush().catch(() => undefined);
  }
}

/**
 * A CloudEvent handler for a Pub/Sub-triggered function: one CONSUMER span per invocation that
 * continues the message's `traceparent` (see `traceInvocation`), with the runtime handed in.
 * A string returned by `handle` becomes the span's `egress.outcome`.
 *
 * @example
 * cloudEvent('create', pubSubHandler('create', (rt, message) => handleRequest(rt, 'apply', message)));
 */
export function pubSubHandler(
  name: string,
  handle: (rt: Runtime, message: BusMessage) => Promise<unknown>,
): (event: CloudEventLike) => Promise<void> {
  void functionTelemetry(name);
  return (event) =>
    invoke(name, (rt) =>
      traceInvocation(event, { function: name, project: rt.config.project, coldStart: ++invocations === 1 }, (m) =>
        handle(rt, m),
      ),
    );
}

/** The parts of an HTTP request the span reads (functions-framework's `Request` fits). */
export interface HttpRequestLike {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * Runs an HTTP function's handler inside a SERVER span `<METHOD> <path>`, continuing a W3C
 * `traceparent` header when the caller sent one, so what the API publishes joins the caller's trace.
 *
 * @returns the handler's status code, recorded as `http.response.status_code`
 */
export function tracedHttp(
  name: string,
  req: HttpRequestLike,
  handle: (rt: Runtime) => Promise<number>,
): Promise<number> {
  void functionTelemetry(name);
  return invoke(name, (rt) =>
    inSpan(
      `${req.method} ${req.path}`,
      {
        kind: SpanKind.SERVER,
        parent: propagation.extract(ROOT_CONTEXT, req.headers),
        attributes: {
          'http.request.method': req.method,
          'url.path': req.path,
          'faas.trigger': 'http',
          'faas.name': name,
          'faas.coldstart': ++invocations === 1,
        },
      },
      async (span) => {
        const status = await handle(rt);
        span.setAttribute('http.response.status_code', status);
        return status;
      },
    ),
  );
}
