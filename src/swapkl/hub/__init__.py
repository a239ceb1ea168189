"""The model hub: pinned downloads, duplicate revisions and revisions the hub does not have."""
