// Techmap for the multiplexer trees that `muxcover -mux4 -mux8` finds: each onto ECP5 slices
// as the slice is built for it. A 4:1 multiplexer is two LUT4s (a two-way multiplexer each,
// three inputs used) joined by the slice's PFUMX; an 8:1 multiplexer joins two of those with
// an L6MUX21. ABC9 alone maps a 4:1 multiplexer as a 6-input LUT (four LUT4s) and a 16:1
// multiplexer as 21 LUT4s (9 here): it only knows a PFUMX as half of a LUT5 whose two LUT4s
// share their inputs.
//
// LUT4 output: INIT[{D, C, B, A}]. 16'hCACA is C ? B : A.

module \$_MUX4_ (A, B, C, D, S, T, Y);
  input A, B, C, D, S, T;
  output Y;
  wire lo, hi;
  LUT4 #(.INIT(16'hCACA)) l0 (.A(A), .B(B), .C(S), .D(1'b0), .Z(lo));
  LUT4 #(.INIT(16'hCACA)) l1 (.A(C), .B(D), .C(S), .D(1'b0), .Z(hi));
  PFUMX m (.ALUT(hi), .BLUT(lo), .C0(T), .Z(Y));
endmodule

module \$_MUX8_ (A, B, C, D, E, F, G, H, S, T, U, Y);
  input A, B, C, D, E, F, G, H, S, T, U;
  output Y;
  wire lo, hi;
  \$_MUX4_ m0 (.A(A), .B(B), .C(C), .D(D), .S(S), .T(T), .Y(lo));
  \$_MUX4_ m1 (.A(E), .B(F), .C(G), .D(H), .S(S), .T(T), .Y(hi));
  L6MUX21 m (.D0(lo), .D1(hi), .SD(U), .Z(Y));
endmodule
