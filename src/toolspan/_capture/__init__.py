"""Value capture: any Python value as bounded, redacted JSON text that never raises."""
