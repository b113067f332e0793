"""The host: user-service install (systemd, launchd), sd_notify, health checks."""
