"""Media the tools may read: images and videos resolved safely, cameras, fetching, sniffing, redaction."""
