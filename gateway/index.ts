/** The gateway's public surface: one local authenticated HTTP and SOCKS5 endpoint, or an agent, in front of the fleet. */
export * from './auth.js';
export { GrammarError, parseSteering, type Steering } from './grammar.js';
export { DEFAULT_LEARNING, Learning, type LearningOptions } from './learning.js';
export { createFleetAgent, createFleetHttpsAgent, type FleetAgentOptions } from './agent.js';
export { createFleetApi, upstreamOf, type FleetApi, type FleetFilters, type ProxyReport } from './fleet-api.js';
export { GatewayMetrics } from './metrics.js';
export { FleetRouter, type RouterOptions } from './router.js';
export type { Upstream } from './selection.js';
export { startGateway, type Gateway, type GatewayOptions, type ListenAddress } from './server.js';
