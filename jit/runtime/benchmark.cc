// Kernel::benchmark: timing cached calls (issue #14). Placeholder.
