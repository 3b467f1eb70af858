"""Fixtures for the tests of core: data model, settings, packaging, deploy manifests."""
