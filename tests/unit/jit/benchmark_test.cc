// Kernel::benchmark tests (issue #14). Placeholder.
