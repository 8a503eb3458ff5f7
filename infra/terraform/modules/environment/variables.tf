variable "paper" {
  description = "Paper id (papers/<id>.yaml, e.g. fastfabric); recorded as the inventory variable upstream_paper."
  type        = string
}

variable "roles" {
  description = "The paper's topology: role name -> number of hosts (see the topology module)."
  type        = map(number)
}

variable "instance_types" {
  description = "Per-role instance type overrides."
  type        = map(string)
  default     = {}
}

variable "default_instance_type" {
  description = "Instance type of every role without an override."
  type        = string
}

variable "region" {
  description = "AWS region of the cluster (recorded on every host; the provider itself is configured by the root)."
  type        = string
}

variable "availability_zone" {
  description = "Availability zone (one AZ: a cluster placement group cannot span AZs)."
  type        = string
}

variable "operator_cidrs" {
  description = "The operator's address(es) as CIDRs; the only outside sources admitted."
  type        = list(string)
}

variable "ssh_public_key" {
  description = "OpenSSH public key text installed on every host."
  type        = string
}

variable "ssh_private_key_file" {
  description = "Path of the matching private key, written into the generated inventory."
  type        = string
}

variable "ssh_user" {
  description = "Remote user Ansible logs in as (ubuntu on Canonical AMIs)."
  type        = string
  default     = "ubuntu"
}

variable "ami_id" {
  description = "AMI id in var.region; null: the newest Ubuntu 24.04 LTS image there (the region module's lookup)."
  type        = string
  default     = null
}

variable "name" {
  description = "Name prefix of every resource."
  type        = string
}

variable "extra_vars" {
  description = "Extra variables for the inventory's `all` group (e.g. upstream_variant)."
  type        = map(string)
  default     = {}
}

variable "tags" {
  description = "Tags added to every resource (the root also sets them as the provider's default_tags)."
  type        = map(string)
  default     = {}
}
