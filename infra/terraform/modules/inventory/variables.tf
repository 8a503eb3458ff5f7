variable "hosts" {
  description = "Hosts from the topology module's `hosts` output: objects with at least name and role."
  type = list(object({
    name = string
    role = string
  }))
}

variable "addresses" {
  description = "Host name -> { public_ip, private_ip }. public_ip is what Ansible connects to; private_ip is what the services bind and advertise within the placement group."
  type = map(object({
    public_ip  = string
    private_ip = string
  }))
}

variable "ssh_user" {
  description = "Remote user Ansible logs in as (ubuntu on Canonical AMIs)."
  type        = string
}

variable "ssh_private_key_file" {
  description = "Path of the private key matching the cluster's aws_key_pair, written into the inventory as ansible_ssh_private_key_file."
  type        = string
}

variable "paper" {
  description = "Paper id (papers/<id>.yaml, e.g. fastfabric); recorded as the inventory variable upstream_paper."
  type        = string
}

variable "extra_vars" {
  description = "Extra variables for the `all` group (e.g. upstream_variant). Values must be strings."
  type        = map(string)
  default     = {}
}
