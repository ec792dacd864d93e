# Every function of infra/topology.yaml: 2nd gen, nodejs22, the source `npm run build` wrote to
# dist/functions/<name>/, its own service account, served over HTTP. Pub/Sub reaches the pushed
# functions through the subscriptions of topology.auto.tf.json, signed with the pubsub_push account.

locals {
  functions = local.topology_functions

  # Functions that call providers (`callsProviders` in infra/topology.yaml): provider secrets, the
  # VPC connector (network.tf: requests and check probe through it) and the providers' own
  # permissions go to these only.
  provider_functions = toset([for name, f in local.functions : name if f.calls_providers])

  # Topics each function publishes to (and may publish to nothing else):
  # requests and relay-report: follow-ups or kicks, and relay commands (each checks the proxies it
  # changed itself: shared/requests.ts, shared/relay-report.ts); check: the next sweep page,
  # follow-ups and peer kicks (shared/reconcile/check.ts) and relay commands
  # (shared/providers/relayed/index.ts); gc: relay deletes; api: requests (shared/api/handler.ts)
  # and a check of a proxy reported banned (shared/api/reports.ts).
  function_publishes = {
    requests       = ["proxy-checks", "relay-commands"]
    check          = ["proxy-checks", "relay-commands"]
    gc             = ["relay-commands"]
    "relay-report" = ["proxy-checks", "relay-commands"]
    health         = []
    api            = ["proxy-requests", "proxy-checks"]
  }

  function_publish_grants = merge([
    for fn, topics in local.function_publishes : {
      for topic in topics : "${fn}/${topic}" => { function = fn, topic = topic }
    }
  ]...)

  # Roles every function needs on the project: Firestore, logs, traces and metrics.
  function_project_roles = ["roles/datastore.user", "roles/logging.logWriter", "roles/cloudtrace.agent", "roles/monitoring.metricWriter"]
  function_role_grants = merge([
    for fn in keys(local.functions) : {
      for role in local.function_project_roles : "${fn}/${role}" => { function = fn, role = role }
    }
  ]...)

  pushed_functions = toset([for name, f in local.functions : name if !f.http])
}

resource "google_service_account" "fn" {
  for_each     = local.functions
  project      = var.project
  account_id   = "${var.name_prefix}fn-${each.key}"
  display_name = "egress-fleet function ${each.key}"

  depends_on = [google_project_service.apis]
}

resource "google_project_iam_member" "fn" {
  for_each = local.function_role_grants
  project  = var.project
  role     = each.value.role
  member   = "serviceAccount:${google_service_account.fn[each.value.function].email}"
}

resource "google_pubsub_topic_iam_member" "fn_publish" {
  for_each = local.function_publish_grants
  project  = var.project
  topic    = local.topic_names[each.value.topic]
  role     = "roles/pubsub.publisher"
  member   = "serviceAccount:${google_service_account.fn[each.value.function].email}"
}

# The identity Pub/Sub signs push requests with; it may invoke the pushed functions and nothing else.
resource "google_service_account" "pubsub_push" {
  project      = var.project
  account_id   = "${var.name_prefix}pubsub-push"
  display_name = "egress-fleet Pub/Sub push"

  depends_on = [google_project_service.apis]
}

resource "google_service_account_iam_member" "pubsub_push_token" {
  service_account_id = google_service_account.pubsub_push.name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = "serviceAccount:${local.pubsub_service_agent}"
}

resource "google_cloud_run_v2_service_iam_member" "push_invoker" {
  for_each = local.pushed_functions
  project  = var.project
  location = var.region
  name     = google_cloudfunctions2_function.fn[each.key].name
  role     = "roles/run.invoker"
  member   = "serviceAccount:${google_service_account.pubsub_push.email}"
}

# Who may call the api function through Cloud Run: the members of api_invokers (a Google ID token
# in X-Serverless-Authorization or Authorization), or anyone with api_public; the function then
# checks its own bearer token either way.
resource "google_cloud_run_v2_service_iam_member" "api_invoker" {
  for_each = toset(var.api_invokers)
  project  = var.project
  location = var.region
  name     = google_cloudfunctions2_function.fn["api"].name
  role     = "roles/run.invoker"
  member   = each.value
}

resource "google_cloud_run_v2_service_iam_member" "api_public" {
  count    = var.api_public ? 1 : 0
  project  = var.project
  location = var.region
  name     = google_cloudfunctions2_function.fn["api"].name
  role     = "roles/run.invoker"
  member   = "allUsers"
}

# Cloud Build runs `npm install` on each function's source with this account.
resource "google_service_account" "build" {
  project      = var.project
  account_id   = "${var.name_prefix}build"
  display_name = "egress-fleet function builds"

  depends_on = [google_project_service.apis]
}

resource "google_project_iam_member" "build" {
  project = var.project
  role    = "roles/cloudbuild.builds.builder"
  member  = "serviceAccount:${google_service_account.build.email}"
}

resource "google_storage_bucket" "sources" {
  project                     = var.project
  name                        = "${var.project}-${var.name_prefix}sources"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = true
  labels                      = local.labels

  depends_on = [google_project_service.apis]
}

data "archive_file" "fn" {
  for_each    = local.functions
  type        = "zip"
  source_dir  = "${local.dist_dir}/functions/${each.key}"
  output_path = "${path.module}/.build/${each.key}.zip"
}

resource "google_storage_bucket_object" "fn" {
  for_each = local.functions
  bucket   = google_storage_bucket.sources.name
  name     = "${each.key}-${data.archive_file.fn[each.key].output_md5}.zip"
  source   = data.archive_file.fn[each.key].output_path
}

resource "google_cloudfunctions2_function" "fn" {
  for_each = local.functions
  project  = var.project
  location = var.region
  name     = "${var.name_prefix}${each.key}"
  labels   = local.labels

  build_config {
    runtime         = "nodejs22"
    entry_point     = each.key
    service_account = google_service_account.build.id

    source {
      storage_source {
        bucket = google_storage_bucket.sources.name
        object = google_storage_bucket_object.fn[each.key].name
      }
    }
  }

  service_config {
    available_memory                 = "${try(var.function_memory_mb[each.key], each.value.memory_mb)}M"
    timeout_seconds                  = each.value.timeout_seconds
    min_instance_count               = try(var.function_scaling[each.key].min, 0)
    max_instance_count               = try(var.function_scaling[each.key].max, 10)
    max_instance_request_concurrency = 1
    service_account_email            = google_service_account.fn[each.key].email
    ingress_settings                 = each.value.http ? "ALLOW_ALL" : var.pushed_ingress
    all_traffic_on_latest_revision   = true
    vpc_connector                    = contains(local.provider_functions, each.key) ? one(google_vpc_access_connector.functions[*].id) : null
    vpc_connector_egress_settings    = contains(local.provider_functions, each.key) && local.vpc_probed ? var.vpc_connector.egress : null

    environment_variables = {
      EGRESS_CONFIG             = "/etc/egress-config/config.yaml"
      EGRESS_PROJECT            = var.project
      EGRESS_INSTALLATION       = var.installation_id
      EGRESS_TELEMETRY          = var.telemetry
      EGRESS_TRACE_SAMPLE_RATIO = tostring(var.trace_sample_ratio)
      NODE_ENV                  = "production" # no stack traces in the framework's own error pages
    }

    # A pinned version: a config change rolls a new revision (functions read the config once).
    secret_volumes {
      mount_path = "/etc/egress-config"
      project_id = var.project
      secret     = google_secret_manager_secret.config.secret_id

      versions {
        version = google_secret_manager_secret_version.config.version
        path    = "config.yaml"
      }
    }

    dynamic "secret_volumes" {
      for_each = contains(local.provider_functions, each.key) ? google_secret_manager_secret.provider : {}
      content {
        mount_path = "/etc/egress-secrets/${secret_volumes.key}"
        project_id = var.project
        secret     = secret_volumes.value.secret_id

        versions {
          version = google_secret_manager_secret_version.provider[secret_volumes.key].version
          path    = "value"
        }
      }
    }

    dynamic "secret_environment_variables" {
      for_each = each.value.http ? [google_secret_manager_secret_version.api_tokens] : []
      content {
        key        = "EGRESS_API_TOKENS"
        project_id = var.project
        secret     = google_secret_manager_secret.api_tokens.secret_id
        version    = secret_environment_variables.value.version
      }
    }

    dynamic "secret_environment_variables" {
      for_each = contains(local.relay_key_functions, each.key) ? [google_secret_manager_secret_version.relay_keys] : []
      content {
        key        = "EGRESS_RELAY_KEYS"
        project_id = var.project
        secret     = google_secret_manager_secret.relay_keys.secret_id
        version    = secret_environment_variables.value.version
      }
    }
  }

  depends_on = [
    google_project_service.apis,
    google_project_iam_member.build,
    google_secret_manager_secret_iam_member.config,
    google_secret_manager_secret_iam_member.provider,
    google_secret_manager_secret_iam_member.api_tokens,
    google_secret_manager_secret_iam_member.relay_keys,
  ]
}
