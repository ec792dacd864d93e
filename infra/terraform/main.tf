# The project's APIs and the values every other file shares, derived from the inputs and from the
# rendered topology (topology.auto.tf.json).

# It calls the Cloud Resource Manager API, enabled below: on the first run it is read at apply time.
# It waits for that one API only, so adding another API later does not defer this read (which would
# make the service agent's address unknown and plan its grants anew).
data "google_project" "this" {
  project_id = var.project

  depends_on = [google_project_service.apis["cloudresourcemanager.googleapis.com"]]
}

locals {
  labels = {
    app          = "egress-fleet"
    installation = var.installation_id
  }

  # The providers config. The functions read config_text (and validate it again on start): the
  # file, with `echoUrl` pointing at the echo VM when there is one (echo.tf). Every key Terraform
  # itself reads is the file's, known at plan time.
  config      = yamldecode(file(var.config_file))
  config_text = var.echo == null ? file(var.config_file) : yamlencode(merge(local.config, { echoUrl = local.echo_url }))

  # One pull subscription and one service account per relay a relay-backed provider names, as the
  # local launcher does (infra/local/stack.ts).
  relays = toset(distinct([
    for p in local.config.providers : try(p.relay, "")
    if contains(local.relay_types, p.type) && try(p.relay, "") != ""
  ]))

  # Seconds between scheduler ticks: the config key each schedule names, else the schema default.
  schedule_seconds = {
    for name, s in local.topology_schedules : name => try(local.config[s.interval_from], s.default_seconds)
  }

  pubsub_service_agent = "service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
  dist_dir             = coalesce(var.dist_dir, "${path.module}/../../dist")
}

# Every API a resource below calls; each such resource depends on this (directly or through what it
# references), so the first apply enables them before using them (schema.test.ts, terraform graph).
resource "google_project_service" "apis" {
  for_each = toset([
    "artifactregistry.googleapis.com",
    "cloudbuild.googleapis.com",
    "cloudfunctions.googleapis.com",
    "cloudresourcemanager.googleapis.com",
    "cloudscheduler.googleapis.com",
    "cloudtrace.googleapis.com",
    "compute.googleapis.com",
    "firestore.googleapis.com",
    "iam.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
    "pubsub.googleapis.com",
    "run.googleapis.com",
    "secretmanager.googleapis.com",
    "storage.googleapis.com",
    "vpcaccess.googleapis.com",
  ])
  project            = var.project
  service            = each.value
  disable_on_destroy = false
}
