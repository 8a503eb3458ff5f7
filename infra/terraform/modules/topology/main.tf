locals {
  # Sorted role names make host order (and so every index) deterministic
  # between runs and independent of map literal order.
  role_names = sort(keys(var.roles))

  hosts = flatten([
    for role in local.role_names : [
      for i in range(var.roles[role]) : {
        name          = "${role}-${i}"
        role          = role
        index         = i
        instance_type = lookup(var.instance_types, role, var.default_instance_type)
        region        = lookup(var.regions, "${role}-${i}", lookup(var.role_regions, role, var.default_region))
      }
    ]
  ])

  hosts_by_name = { for h in local.hosts : h.name => h }
}
