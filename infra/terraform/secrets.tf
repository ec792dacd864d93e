# Secret Manager: the providers config, the API tokens and provider credentials. Each function may
# read only the secrets it mounts. Proxy credentials stay in Firestore (credentials/{name}): see
# docs/deploy.md.

resource "google_secret_manager_secret" "config" {
  project   = var.project
  secret_id = "${var.name_prefix}config"
  labels    = local.labels

  replication {
    auto {}
  }

  depends_on = [google_project_service.apis]
}

resource "google_secret_manager_secret_version" "config" {
  secret      = google_secret_manager_secret.config.id
  secret_data = local.config_text
}

resource "google_secret_manager_secret_iam_member" "config" {
  for_each  = local.functions
  project   = var.project
  secret_id = google_secret_manager_secret.config.secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${google_service_account.fn[each.key].email}"
}

# Two tokens are generated, each with its scope (shared/api/scopes.ts): an admin one for people and
# the CLI, a discover one for gateways and crawlers (discovery and reports only). var.api_tokens adds
# more, each "scope:token" or a bare token (admin); all go comma-separated in EGRESS_API_TOKENS.
resource "random_password" "api_token" {
  length  = 40
  special = false
}

resource "random_password" "api_discover_token" {
  length  = 40
  special = false
}

resource "google_secret_manager_secret" "api_tokens" {
  project   = var.project
  secret_id = "${var.name_prefix}api-tokens"
  labels    = local.labels

  replication {
    auto {}
  }

  depends_on = [google_project_service.apis]
}

resource "google_secret_manager_secret_version" "api_tokens" {
  secret = google_secret_manager_secret.api_tokens.id
  secret_data = join(",", concat(
    ["admin:${random_password.api_token.result}", "discover:${random_password.api_discover_token.result}"],
    var.api_tokens,
  ))
}

resource "google_secret_manager_secret_iam_member" "api_tokens" {
  project   = var.project
  secret_id = google_secret_manager_secret.api_tokens.secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${google_service_account.fn["api"].email}"
}

resource "google_secret_manager_secret" "provider" {
  for_each  = var.provider_secret_files
  project   = var.project
  secret_id = "${var.name_prefix}provider-${each.key}"
  labels    = local.labels

  replication {
    auto {}
  }

  depends_on = [google_project_service.apis]
}

resource "google_secret_manager_secret_version" "provider" {
  for_each    = var.provider_secret_files
  secret      = google_secret_manager_secret.provider[each.key].id
  secret_data = file(each.value)
}

resource "google_secret_manager_secret_iam_member" "provider" {
  for_each = {
    for pair in setproduct(keys(var.provider_secret_files), tolist(local.provider_functions)) :
    "${pair[0]}/${pair[1]}" => { secret = pair[0], function = pair[1] }
  }
  project   = var.project
  secret_id = google_secret_manager_secret.provider[each.value.secret].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${google_service_account.fn[each.value.function].email}"
}

# One HMAC key per relay (shared/wire/signature.ts): relay-report checks every report with it, and
# the functions that call providers sign every command with it. var.relay_keys replaces the
# generated key of a relay (to rotate: the new key first, the old one after it; docs/operations.md).
# Each relay host gets its own entry from the relay_keys output.
resource "random_bytes" "relay_key" {
  for_each = local.relays
  length   = 32
}

locals {
  relay_keys = merge(
    { for id in local.relays : id => [{ id = "k1", secret = random_bytes.relay_key[id].base64 }] },
    var.relay_keys,
  )
  relay_key_functions = setunion(local.provider_functions, ["relay-report"])
}

resource "google_secret_manager_secret" "relay_keys" {
  project   = var.project
  secret_id = "${var.name_prefix}relay-keys"
  labels    = local.labels

  replication {
    auto {}
  }

  depends_on = [google_project_service.apis]
}

resource "google_secret_manager_secret_version" "relay_keys" {
  secret      = google_secret_manager_secret.relay_keys.id
  secret_data = jsonencode(local.relay_keys)
}

resource "google_secret_manager_secret_iam_member" "relay_keys" {
  for_each  = local.relay_key_functions
  project   = var.project
  secret_id = google_secret_manager_secret.relay_keys.secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${google_service_account.fn[each.key].email}"
}
