# The system's variables: set by systems/<system>/terraform/single-region.tfvars.json
# (no defaults, so a system's file states every one of them).

variable "system" {
  description = "The system provisioned (systems/<system>/); recorded as the inventory variable upstream_variant, the System tag and the default name prefix."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9.-]*$", var.system))
    error_message = "A system's name is the name of its folder under systems/: lower-case letters, digits, '.' and '-'."
  }
}

variable "paper" {
  description = "The paper the system reproduces (the `paper` of systems/<system>/system.yaml); recorded as the inventory variable upstream_paper and the Paper tag."
  type        = string
}

variable "roles" {
  description = "Role name -> number of hosts (see the topology module): the system's file gives the paper's topology, for use by hand; the aws provider passes the experiment's layout instead (harness/topology.py: only the hosts it lays out)."
  type        = map(number)
}

variable "default_instance_type" {
  description = "Instance type of every role without an entry in instance_types; the choice per system is justified in ../../README.md."
  type        = string
}

variable "instance_types" {
  description = "Per-role instance types that differ from default_instance_type ({} for none)."
  type        = map(string)
}

# The operator's inputs (the aws provider passes them from its options).

variable "operator_cidrs" {
  description = "The operator's address(es) as CIDRs, e.g. [\"203.0.113.7/32\"]; the only outside sources admitted."
  type        = list(string)
}

variable "ssh_public_key_file" {
  description = "Path of the OpenSSH public key installed on every host."
  type        = string
}

variable "ssh_private_key_file" {
  description = "Path of the matching private key, written into the generated inventory."
  type        = string
}

variable "ami_id" {
  description = "AMI id in var.region; null (the default): the newest Ubuntu 24.04 LTS image Canonical publishes there. The one used is output as ami_id and recorded in the run's metadata."
  type        = string
  default     = null
}

variable "region" {
  description = "AWS region of the cluster."
  type        = string
  default     = "us-east-1"
}

variable "availability_zone" {
  description = "Availability zone (one AZ: a cluster placement group cannot span AZs)."
  type        = string
  default     = "us-east-1a"
}

variable "name" {
  description = "Name prefix of every resource; null gives repro-<system>."
  type        = string
  default     = null
}
