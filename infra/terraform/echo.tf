# The echo endpoint the probes fetch through every proxy (config `echoUrl`): the repository's echo
# server (infra/echo/) on a small VM with a static external address, so it sees each proxy's egress
# address as the TCP peer. With `echo` set (the default), the config stored for the functions gets
# `echoUrl` = this VM's URL; `echo = null` keeps the file's own.

# Waits for the Compute API only: depending on every API would defer this read to apply time
# whenever one is added, making the zone unknown and replacing the VM.
data "google_compute_zones" "echo" {
  count   = var.echo == null ? 0 : 1
  project = var.project
  region  = var.region

  depends_on = [google_project_service.apis["compute.googleapis.com"]]
}

locals {
  echo_zone = var.echo == null ? null : coalesce(var.echo.zone, try(data.google_compute_zones.echo[0].names[0], null))
  echo_url  = var.echo == null ? null : "http://${google_compute_address.echo[0].address}${local.echo_port == 80 ? "" : ":${local.echo_port}"}/"
}

resource "google_compute_address" "echo" {
  count   = var.echo == null ? 0 : 1
  project = var.project
  region  = var.region
  name    = "${var.name_prefix}echo"
  labels  = local.labels

  depends_on = [google_project_service.apis]
}

resource "google_compute_instance" "echo" {
  count                     = var.echo == null ? 0 : 1
  project                   = var.project
  zone                      = local.echo_zone
  name                      = "${var.name_prefix}echo"
  machine_type              = var.echo.machine_type
  tags                      = ["${var.name_prefix}echo"]
  labels                    = local.labels
  allow_stopping_for_update = true

  boot_disk {
    initialize_params {
      image = "projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64"
      size  = 10
      type  = "pd-standard"
    }
  }

  network_interface {
    network = var.echo.network

    access_config {
      nat_ip = google_compute_address.echo[0].address
    }
  }

  # No service_account block: the VM runs without a Google identity (it calls no Google API).
  metadata = {
    user-data = file("${local.dist_dir}/echo/user-data.yaml")
  }
}

# Anyone may ask the echo who they are: it answers the caller's own address and nothing else, and
# the proxies' egress addresses are ephemeral, so no narrower source range would hold.
resource "google_compute_firewall" "echo" {
  count         = var.echo == null ? 0 : 1
  project       = var.project
  name          = "${var.name_prefix}echo"
  network       = var.echo.network
  direction     = "INGRESS"
  source_ranges = ["0.0.0.0/0"]
  target_tags   = ["${var.name_prefix}echo"]

  allow {
    protocol = "tcp"
    ports    = [tostring(local.echo_port)]
  }

  depends_on = [google_project_service.apis]
}
