# The system's variables: set by systems/bftsmart-orderer/terraform/bftsmart-geo.tfvars.json
# (no defaults, so the system's file states every one of them).

variable "system" {
  description = "The system provisioned (systems/<system>/); recorded as the inventory variable upstream_variant and the System tag."
  type        = string
}

variable "paper" {
  description = "The paper the system reproduces (the `paper` of systems/<system>/system.yaml); recorded as the inventory variable upstream_paper and the Paper tag."
  type        = string
}

variable "instance_type" {
  description = "Instance type of every host: the paper used m4.4xlarge, 16 vCPUs (seed 004 line 162)."
  type        = string
}

variable "roles" {
  description = "Role -> number of hosts, each role a place (the system's file: the paper's layout, one host per region; the aws provider passes the experiment's layout)."
  type        = map(number)
}

variable "role_regions" {
  description = "Role -> AWS region of its hosts (infra/aws/regions.json names the places); every region must be one this root has a provider for."
  type        = map(string)

  validation {
    condition     = alltrue([for r in values(var.role_regions) : contains(["us-west-2", "eu-west-1", "ap-southeast-2", "sa-east-1", "us-east-1"], r)])
    error_message = "This root has providers for us-west-2, eu-west-1, ap-southeast-2, sa-east-1 and us-east-1 only."
  }
}

# The operator's inputs.

variable "operator_cidrs" {
  description = "The operator's address(es) as CIDRs, e.g. [\"203.0.113.7/32\"]; the only outside sources admitted besides the other regions' hosts."
  type        = list(string)
}

variable "ssh_public_key_file" {
  description = "Path of the OpenSSH public key installed on every host (one aws_key_pair per region)."
  type        = string
}

variable "ssh_private_key_file" {
  description = "Path of the matching private key, written into the generated inventory."
  type        = string
}

variable "ami_ids" {
  description = "AMI id per region (AMI ids differ between regions; keys us-west-2, eu-west-1, ap-southeast-2, sa-east-1, us-east-1); a region without one gets its newest Ubuntu 24.04 LTS image (the region module's lookup)."
  type        = map(string)
  default     = {}
}

variable "availability_zones" {
  description = "Availability zone per region."
  type        = map(string)
  default = {
    "us-west-2"      = "us-west-2a"
    "eu-west-1"      = "eu-west-1a"
    "ap-southeast-2" = "ap-southeast-2a"
    "sa-east-1"      = "sa-east-1a"
    "us-east-1"      = "us-east-1a"
  }
}

variable "name" {
  description = "Name prefix of every resource."
  type        = string
  default     = "repro-bftsmart-geo"
}
