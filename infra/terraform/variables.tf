# Inputs of the deployment. Topics, subscriptions and schedules are not inputs: they come from
# infra/topology.yaml through topology.auto.tf.json.

variable "project" {
  description = "Google Cloud project id that holds the functions, Pub/Sub, Firestore and the secrets."
  type        = string
}

variable "region" {
  description = "Region of the functions, the scheduler jobs and the optional VPC connector."
  type        = string
  default     = "us-central1"
}

variable "installation_id" {
  description = "This installation's id (EGRESS_INSTALLATION): instances carry it and GC touches only its own. Must equal the relays' installationId."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.installation_id))
    error_message = "installation_id must be a DNS-1123 label (lowercase letters, digits and '-', at most 63 characters)."
  }
}

variable "config_file" {
  description = "The providers config (YAML, schema in shared/config/schema.ts). Stored in Secret Manager and mounted into every function as EGRESS_CONFIG."
  type        = string
}

variable "firestore_location" {
  description = "Location of the (default) Firestore database, e.g. nam5 or eur3. Cannot change once created."
  type        = string
  default     = "nam5"
}

variable "name_prefix" {
  description = "Prefix of the function and service-account names."
  type        = string
  default     = "egress-"
}

variable "dist_dir" {
  description = "Directory `npm run build` wrote (holds functions/<name>/). Default: dist/ at the repository root."
  type        = string
  default     = null
}

variable "function_scaling" {
  description = "Instance limits per function name; functions not listed get min 0, max 10."
  type = map(object({
    min = number
    max = number
  }))
  default = {
    check = { min = 0, max = 20 }
    api   = { min = 0, max = 5 }
  }
}

variable "pushed_ingress" {
  description = "Ingress of the Pub/Sub-pushed functions. IAM is the gate either way (only the pubsub-push account may invoke them); ALLOW_INTERNAL_ONLY also closes the network path."
  type        = string
  default     = "ALLOW_ALL"

  validation {
    condition     = contains(["ALLOW_ALL", "ALLOW_INTERNAL_ONLY"], var.pushed_ingress)
    error_message = "pushed_ingress must be ALLOW_ALL or ALLOW_INTERNAL_ONLY."
  }
}

variable "api_public" {
  description = "Let anyone reach the api function (it checks its own bearer tokens); false keeps it to callers with roles/run.invoker."
  type        = bool
  default     = true
}

variable "api_tokens" {
  description = "More bearer tokens the API accepts besides the two Terraform generates, each \"scope:token\" (scope discover, read or admin) or a bare token (admin); the token at least 16 characters."
  type        = list(string)
  default     = []
  sensitive   = true

  validation {
    condition = alltrue([for t in var.api_tokens : !strcontains(t, ",") && (
      can(regex("^(discover|read|admin):.{16,}$", t)) || (!strcontains(t, ":") && length(t) >= 16)
    )])
    error_message = "Each API token must be \"scope:token\" (scope discover, read or admin) or a bare token without \":\", the token at least 16 characters long and without a comma."
  }
}

variable "relay_keys" {
  description = "Relay HMAC keys by relay id, replacing the generated one: [{id, secret (base64, >= 32 bytes)}], the signing key first (rotation: docs/operations.md)."
  type        = map(list(object({ id = string, secret = string })))
  default     = {}
  sensitive   = true
}

variable "provider_secret_files" {
  description = "Provider credentials: secret name => local file. Each is stored in Secret Manager and mounted into check, gc and health at /etc/egress-secrets/<name>/value (name that path in the config, e.g. a gcp provider's options.keyFile)."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for name in keys(var.provider_secret_files) : can(regex("^[a-z][-a-z0-9]{0,40}$", name))])
    error_message = "Secret names must be lowercase letters, digits and '-', starting with a letter, at most 41 characters."
  }
}

variable "proxy_source_ranges" {
  description = "CIDR ranges allowed to reach the proxy port of gcp-provider VMs: your clients, plus the check function's egress (see docs/deploy.md)."
  type        = list(string)

  validation {
    condition     = length(var.proxy_source_ranges) > 0 && alltrue([for r in var.proxy_source_ranges : can(cidrhost(r, 0))])
    error_message = "proxy_source_ranges must list at least one CIDR range."
  }
}

variable "proxy_extra_ports" {
  description = "Ports opened beside each gcp provider's proxyPort, for proxies whose spec.port names one (e.g. [\"8443\"])."
  type        = list(string)
  default     = []
}

variable "vpc_connector" {
  description = "Create a Serverless VPC Access connector for check, gc and health (to reach private Pod IPs or a private cluster endpoint). null: none."
  type = object({
    network       = string
    ip_cidr_range = string
    egress        = optional(string, "PRIVATE_RANGES_ONLY")
  })
  default = null

  validation {
    condition     = var.vpc_connector == null || contains(["PRIVATE_RANGES_ONLY", "ALL_TRAFFIC"], try(var.vpc_connector.egress, ""))
    error_message = "vpc_connector.egress must be PRIVATE_RANGES_ONLY or ALL_TRAFFIC."
  }
}

variable "telemetry" {
  description = "EGRESS_TELEMETRY of the functions: gcp (Cloud Trace and Cloud Monitoring) or none."
  type        = string
  default     = "gcp"

  validation {
    condition     = contains(["gcp", "none"], var.telemetry)
    error_message = "telemetry must be gcp or none."
  }
}

variable "function_memory_mb" {
  description = "Memory per function name, overriding infra/topology.yaml (e.g. 512 for gc and health when a gcp provider is configured)."
  type        = map(number)
  default     = {}
}

variable "trace_sample_ratio" {
  description = "EGRESS_TRACE_SAMPLE_RATIO: share of new traces recorded (0 to 1)."
  type        = number
  default     = 0.1
}

variable "kubernetes_cluster_projects" {
  description = "Projects of the GKE clusters kubernetes providers use in gke mode: check, gc and health get roles/container.clusterViewer there."
  type        = list(string)
  default     = []
}
