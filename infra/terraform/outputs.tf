output "api_url" {
  description = "The API and dashboard (EGRESS_API_URL for the egress CLI)."
  value       = google_cloudfunctions2_function.fn["api"].service_config[0].uri
}

output "api_token" {
  description = "The generated admin API token (EGRESS_TOKEN for the egress CLI and the dashboard)."
  value       = random_password.api_token.result
  sensitive   = true
}

output "api_discover_token" {
  description = "The generated discover API token: discovery and reports only (for gateways and crawlers)."
  value       = random_password.api_discover_token.result
  sensitive   = true
}

output "relay_service_accounts" {
  description = "Relay id => service account email; create a key for each (docs/deploy.md)."
  value       = { for id, sa in google_service_account.relay : id => sa.email }
}

output "relay_subscriptions" {
  description = "Relay id => the subscription its config must name."
  value       = { for id, s in google_pubsub_subscription.relay_commands : id => s.name }
}

output "function_service_accounts" {
  description = "Function => service account email (bind Kubernetes RBAC and provider-project roles to these)."
  value       = { for name, sa in google_service_account.fn : name => sa.email }
}

output "relay_keys" {
  description = "Per relay id, the EGRESS_RELAY_KEYS value for that relay's host (its own keys only)."
  value       = { for id in local.relays : id => jsonencode({ (id) = local.relay_keys[id] }) }
  sensitive   = true
}

output "echo_url" {
  description = "The echo VM's URL, which the stored config's echoUrl names (null with echo = null): give it to each relay's config too."
  value       = local.echo_url
}
