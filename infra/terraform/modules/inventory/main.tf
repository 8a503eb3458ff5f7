locals {
  roles = sort(distinct([for h in var.hosts : h.role]))

  # Fail at plan time rather than writing an inventory with a host Ansible
  # cannot reach: every host needs an address entry (checked by the
  # precondition below; try() keeps the render itself from failing first).
  missing = [for h in var.hosts : h.name if !contains(keys(var.addresses), h.name)]

  inventory = {
    all = {
      vars = merge({
        ansible_user                 = var.ssh_user
        ansible_ssh_private_key_file = var.ssh_private_key_file
        ansible_python_interpreter   = "/usr/bin/python3"
        upstream_provider            = "aws"
        upstream_paper               = var.paper
      }, var.extra_vars)
      children = {
        for role in local.roles : role => {
          hosts = {
            for h in var.hosts : h.name => {
              ansible_host = try(var.addresses[h.name].public_ip, null)
              private_ip   = try(var.addresses[h.name].private_ip, null)
              role         = h.role
            } if h.role == role
          }
        }
      }
    }
  }
}

resource "terraform_data" "check_addresses" {
  # terraform_data is built into Terraform (no provider): it carries the
  # precondition so a missing address stops plan with the host names.
  input = length(local.missing)

  lifecycle {
    precondition {
      condition     = length(local.missing) == 0
      error_message = "No address for host(s): ${join(", ", local.missing)}."
    }
  }
}
