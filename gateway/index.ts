/** The gateway's public surface: one local authenticated proxy endpoint, or an agent, in front of the fleet. */
export { credentialCheck, gatewayUrl, randomCredentials, type AuthResult, type GatewayCredentials } from './auth.js';
export { createFleetAgent, createFleetHttpsAgent, type FleetAgentOptions } from './agent.js';
export {
  createFleetApi,
  FleetApiError,
  upstreamOf,
  type FleetApi,
  type FleetFilters,
  type ProxyReport,
} from './fleet-api.js';
export { GatewayMetrics } from './metrics.js';
export { FleetRouter, type RouterOptions } from './router.js';
export type { Upstream } from './selection.js';
export { startGateway, type Gateway, type GatewayOptions, type ListenAddress } from './server.js';
