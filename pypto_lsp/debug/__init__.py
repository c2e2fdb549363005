"""The debug adapter: step through a pass dump over the Debug Adapter Protocol (docs/debugger.md)."""
