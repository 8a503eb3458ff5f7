terraform {
  # Provider-free on purpose: this module is pure data so that `terraform test`
  # can run it without registry access (see ../../README.md).
  required_version = ">= 1.6.0"
}
