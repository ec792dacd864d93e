# One service account per relay id (from the providers config): it may pull its own subscription
# and publish reports, nothing else. Its key is created by hand (docs/deploy.md), never by Terraform,
# so no private key lands in the state.

resource "google_service_account" "relay" {
  for_each     = local.relays
  project      = var.project
  account_id   = "${var.name_prefix}relay-${each.key}"
  display_name = "egress-fleet relay ${each.key}"

  depends_on = [google_project_service.apis]

  lifecycle {
    precondition {
      condition     = length("${var.name_prefix}relay-${each.key}") <= 30
      error_message = "The service account id of relay \"${each.key}\" would exceed 30 characters: use a shorter relay id or name_prefix."
    }
  }
}

resource "google_pubsub_subscription_iam_member" "relay_pull" {
  for_each     = local.relays
  project      = var.project
  subscription = google_pubsub_subscription.relay_commands[each.key].name
  role         = "roles/pubsub.subscriber"
  member       = "serviceAccount:${google_service_account.relay[each.key].email}"
}

resource "google_pubsub_topic_iam_member" "relay_report" {
  for_each = local.relays
  project  = var.project
  topic    = google_pubsub_topic.relay_reports.name
  role     = "roles/pubsub.publisher"
  member   = "serviceAccount:${google_service_account.relay[each.key].email}"
}
