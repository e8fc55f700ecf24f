"""Host-side helpers run from the repository root (not installed with the
package): ``guest.dos_control.RPC``, the contract's minimal Python client."""
