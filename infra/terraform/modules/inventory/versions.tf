terraform {
  # Provider-free: renders text only. The environment writes it to disk.
  required_version = ">= 1.6.0"
}
