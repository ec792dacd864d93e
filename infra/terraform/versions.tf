# Providers and the Terraform version this configuration is written for (check blocks need 1.5).
# Each provider is pinned to the patch releases of the version whose published schema npm test checks
# every resource and argument against (the @cdktf/provider-* devDependencies, schema.test.ts): `~>
# X.Y.Z` accepts X.Y.Z up to X.(Y+1).0, and the providers add resources and arguments only in minor
# releases. Raising a pin means raising the package with it.
terraform {
  required_version = ">= 1.5"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "~> 6.50.0"
    }
    archive = {
      source  = "hashicorp/archive"
      version = "~> 2.7.1"
    }
    random = {
      source  = "hashicorp/random"
      version = "~> 3.7.2"
    }
  }
}

provider "google" {
  project = var.project
  region  = var.region
}
