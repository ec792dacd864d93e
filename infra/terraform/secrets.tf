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

# One token is generated; var.api_tokens adds more (comma-separated in EGRESS_API_TOKENS).
resource "random_password" "api_token" {
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
  secret      = google_secret_manager_secret.api_tokens.id
  secret_data = join(",", concat([random_password.api_token.result], var.api_tokens))
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
