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
  description = "Ubuntu 18.04 LTS AMI id in var.region (recorded in the run's metadata)."
  type        = string
}

variable "default_instance_type" {
  description = "Instance type of every role without an override; the default is justified in ../../README.md."
  type        = string
  default     = "c5.4xlarge"
}

variable "instance_types" {
  description = "Per-role instance type overrides."
  type        = map(string)
  default     = {}
}

variable "name" {
  description = "Name prefix of every resource."
  type        = string
  default     = "repro-bftsmart"
}

variable "node_count" {
  description = "Ordering nodes: 4, 7 or 10 (f = 1, 2, 3; seed 004 line 143)."
  type        = number
  default     = 4

  validation {
    condition     = contains([4, 7, 10], var.node_count)
    error_message = "The paper ran 4, 7 and 10 nodes."
  }
}
