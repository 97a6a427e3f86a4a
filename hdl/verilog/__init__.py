"""The unit as Verilog, and its header for users of the Verilog."""
