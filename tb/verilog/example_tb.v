// Example: the emitted unit driven from plain Verilog, no Python at run time.
//
//   make verilog [AXI_DATA_BITS=128|256|512]                  (build/tensorlsu_lsu.v and its .vh)
//   iverilog -g2012 -I build -o build/example_tb build/tensorlsu_lsu.v tb/verilog/example_tb.v
//   vvp build/example_tb                                               (prints PASS or FAIL)
//
// Dialect: Verilog-2005 and, from SystemVerilog (IEEE 1800-2012), only size casts (16'(x)):
// Icarus needs -g2012. The emitted unit itself is plain Verilog-2005. Every width comes from
// the header, so the bench runs at each AXI data width the unit offers (128, 256, 512 bits).
//
// It fills shared memory through the fill port (each 16-bit element holds its own halfword
// address, a / 2), runs an ldmatrix .m8n8.x4.trans.b16, a refused stmatrix (misaligned: its
// beats sent all the same, docs/ports.md) and an stmatrix .m8n8.x2.b16, reads the stored rows
// back with an ldmatrix .m8n8.x2.b16 and dumps one line.
//
// Where the expected values come from: the PTX text's ldmatrix / stmatrix fragment layout of
// .m8n8 .b16 -- thread t holds, of each matrix, row t/4, elements 2(t mod 4) and 2(t mod 4)+1
// (the lower one in the low half of the register); .trans loads the transposed matrix, so
// thread t holds rows 2(t mod 4) and 2(t mod 4)+1 of column t/4. The H200 vectors in tb/data
// confirm the layout. Bank cycles: the H200 rule (docs/ARCHITECTURE.md) -- per matrix, the most
// distinct 16-byte rows in one bank quad (row address / 16 mod 8).
//
// Tensor Memory: warp 1 stores with tcgen05.st .32x32b.x2 into quadrant 1 (lanes 32..63) and
// loads the same cells back with tcgen05.ld .32x32b.x2; a load with a lane of quadrant 0 is
// refused. The PTX text's .32x32b layout: thread t reaches lane (taddr's lane + t), register
// r column (taddr's column + r). The other quadrants' ports are tied off.
//
// Global memory: a wmma.load .c .row .m16n16k16 .f32 from global address 0x10000 (stride 16
// elements) through the AXI port, against a read-only AXI4 subordinate written below in which the
// 32-bit word at byte address a holds a / 4. The fragment layout (docs/wmma-layouts.md, measured
// on the H200): slot s of thread t is element (t/4 + 8 ((s/2) mod 2), 2 (t mod 4) + (s mod 2)
// + 8 (s/4)), and a .f32 fragment's slot s is register s.
`timescale 1ns/1ps
`include "tensorlsu_lsu.vh"

module example_tb;
    reg clk = 0, rst = 1;
    always #5 clk = ~clk;

    reg  [`TENSORLSU_INSTR_WIDTH-1:0]  instr_payload = 0;
    reg                                instr_valid = 0;
    wire                               instr_ready;
    reg  [`TENSORLSU_STORE_WIDTH-1:0]  store_payload = 0;
    reg                                store_valid = 0;
    wire                               store_ready;
    wire [`TENSORLSU_RESULT_WIDTH-1:0] result_payload;
    wire                               result_valid;
    reg                                result_ready = 0;
    reg  [`TENSORLSU_FILL_WIDTH-1:0]   fill_payload = 0;
    reg                                fill_valid = 0;
    wire                               fill_ready;
    reg  [`TENSORLSU_DUMP_REQ_WIDTH-1:0] dump_req_payload = 0;
    reg                                dump_req_valid = 0;
    wire                               dump_req_ready;
    wire [`TENSORLSU_DUMP_WIDTH-1:0]   dump_payload;
    wire                               dump_valid;
    reg                                dump_ready = 0;

    // Tensor Memory quadrant 1 (warp 1)
    reg  [`TENSORLSU_TMEM_INSTR_WIDTH-1:0]  tm_instr_payload = 0;
    reg                                     tm_instr_valid = 0;
    wire                                    tm_instr_ready;
    reg  [`TENSORLSU_TMEM_STORE_WIDTH-1:0]  tm_store_payload = 0;
    reg                                     tm_store_valid = 0;
    wire                                    tm_store_ready;
    wire [`TENSORLSU_TMEM_RESULT_WIDTH-1:0] tm_result_payload;
    wire                                    tm_result_valid;
    reg                                     tm_result_ready = 0;

    // the global memory: one INCR burst at a time; the word at byte address a holds a / 4
    wire                              axi_arvalid, axi_rready;
    wire [`TENSORLSU_AXI_ID_BITS-1:0] axi_arid;
    wire [31:0]                       axi_araddr;
    wire [7:0]                        axi_arlen;
    reg                               axi_arready = 1, axi_rvalid = 0;
    reg  [`TENSORLSU_AXI_ID_BITS-1:0] axi_rid = 0;
    reg  [`TENSORLSU_AXI_DATA_BITS-1:0] axi_rdata;
    reg  [31:0]                       rd_addr = 0;
    reg  [8:0]                        rd_left = 0;
    integer w;
    always @* for (w = 0; w < `TENSORLSU_AXI_DATA_BITS / 32; w = w + 1) axi_rdata[32 * w +: 32] = rd_addr / 4 + w;
    always @(posedge clk)
        if (rst) begin
            axi_arready <= 1;
            axi_rvalid <= 0;
        end else if (axi_arvalid && axi_arready) begin
            axi_arready <= 0;
            axi_rvalid <= 1;
            axi_rid <= axi_arid;
            rd_addr <= axi_araddr;
            rd_left <= axi_arlen + 1;
        end else if (axi_rvalid && axi_rready) begin
            rd_addr <= rd_addr + `TENSORLSU_AXI_DATA_BITS / 8;
            rd_left <= rd_left - 1;
            if (rd_left == 1) begin
                axi_rvalid <= 0;
                axi_arready <= 1;
            end
        end

    tensorlsu_lsu dut (
        .clk(clk), .rst(rst),
        .smem_size(`TENSORLSU_SMEM_SIZE_WIDTH'(`TENSORLSU_SMEM_BYTES)),   // all of shared memory
        .instr__payload(instr_payload), .instr__valid(instr_valid), .instr__ready(instr_ready),
        .store__payload(store_payload), .store__valid(store_valid), .store__ready(store_ready),
        .result__payload(result_payload), .result__valid(result_valid), .result__ready(result_ready),
        .fill__payload(fill_payload), .fill__valid(fill_valid), .fill__ready(fill_ready),
        .dump_req__payload(dump_req_payload), .dump_req__valid(dump_req_valid),
        .dump_req__ready(dump_req_ready),
        .dump__payload(dump_payload), .dump__valid(dump_valid), .dump__ready(dump_ready),
        .tmem_instr__1__payload(tm_instr_payload), .tmem_instr__1__valid(tm_instr_valid),
        .tmem_instr__1__ready(tm_instr_ready),
        .tmem_store__1__payload(tm_store_payload), .tmem_store__1__valid(tm_store_valid),
        .tmem_store__1__ready(tm_store_ready),
        .tmem_result__1__payload(tm_result_payload), .tmem_result__1__valid(tm_result_valid),
        .tmem_result__1__ready(tm_result_ready),
        .tmem_fill__1__payload({`TENSORLSU_TMEM_FILL_WIDTH{1'b0}}), .tmem_fill__1__valid(1'b0),
        .tmem_dump_req__1__payload({`TENSORLSU_TMEM_DUMP_REQ_WIDTH{1'b0}}), .tmem_dump_req__1__valid(1'b0), .tmem_dump__1__ready(1'b0),
        .tmem_instr__0__payload({`TENSORLSU_TMEM_INSTR_WIDTH{1'b0}}), .tmem_instr__0__valid(1'b0), .tmem_store__0__payload({`TENSORLSU_TMEM_STORE_WIDTH{1'b0}}),
        .tmem_store__0__valid(1'b0), .tmem_result__0__ready(1'b0), .tmem_fill__0__payload({`TENSORLSU_TMEM_FILL_WIDTH{1'b0}}),
        .tmem_fill__0__valid(1'b0), .tmem_dump_req__0__payload({`TENSORLSU_TMEM_DUMP_REQ_WIDTH{1'b0}}), .tmem_dump_req__0__valid(1'b0),
        .tmem_dump__0__ready(1'b0),
        .tmem_instr__2__payload({`TENSORLSU_TMEM_INSTR_WIDTH{1'b0}}), .tmem_instr__2__valid(1'b0), .tmem_store__2__payload({`TENSORLSU_TMEM_STORE_WIDTH{1'b0}}),
        .tmem_store__2__valid(1'b0), .tmem_result__2__ready(1'b0), .tmem_fill__2__payload({`TENSORLSU_TMEM_FILL_WIDTH{1'b0}}),
        .tmem_fill__2__valid(1'b0), .tmem_dump_req__2__payload({`TENSORLSU_TMEM_DUMP_REQ_WIDTH{1'b0}}), .tmem_dump_req__2__valid(1'b0),
        .tmem_dump__2__ready(1'b0),
        .tmem_instr__3__payload({`TENSORLSU_TMEM_INSTR_WIDTH{1'b0}}), .tmem_instr__3__valid(1'b0), .tmem_store__3__payload({`TENSORLSU_TMEM_STORE_WIDTH{1'b0}}),
        .tmem_store__3__valid(1'b0), .tmem_result__3__ready(1'b0), .tmem_fill__3__payload({`TENSORLSU_TMEM_FILL_WIDTH{1'b0}}),
        .tmem_fill__3__valid(1'b0), .tmem_dump_req__3__payload({`TENSORLSU_TMEM_DUMP_REQ_WIDTH{1'b0}}), .tmem_dump_req__3__valid(1'b0),
        .tmem_dump__3__ready(1'b0),
        // the tcgen05.cp port: no copy here
        .cp_instr__payload({`TENSORLSU_CP_INSTR_WIDTH{1'b0}}), .cp_instr__valid(1'b0), .cp_result__ready(1'b0),
        // the global AXI port: reads only; the write channels stay idle
        .axi__arvalid(axi_arvalid), .axi__arready(axi_arready), .axi__arid(axi_arid), .axi__araddr(axi_araddr),
        .axi__arlen(axi_arlen), .axi__rvalid(axi_rvalid), .axi__rready(axi_rready), .axi__rid(axi_rid),
        .axi__rdata(axi_rdata), .axi__rresp(2'b0), .axi__rlast(rd_left == 1),
        .axi__awready(1'b0), .axi__wready(1'b0), .axi__bvalid(1'b0), .axi__bid({`TENSORLSU_AXI_ID_BITS{1'b0}}),
        .axi__bresp(2'b0));

    integer errors = 0;
    integer t, r, j, line;
    reg [31:0] want;
    reg [15:0] half;

    // Each handshake: drive after a falling edge, done at the first rising edge with ready.
    task put_instr(input [6:0] form, input [31:0] base, input [31:0] step);
        put_wmma(form, base, step, 0, `TENSORLSU_SPACE_SHARED);
    endtask

    // thread t's address base + step t; a wmma.load's stride (elements) and state space
    task put_wmma(input [6:0] form, input [31:0] base, input [31:0] step, input [31:0] stride,
                  input [1:0] space);
        begin
            @(negedge clk);
            instr_payload = 0;
            instr_payload[`TENSORLSU_INSTR_FORM_OFFSET +: `TENSORLSU_INSTR_FORM_WIDTH] = form;
            for (t = 0; t < 32; t = t + 1)
                instr_payload[`TENSORLSU_INSTR_ADDR_OFFSET + t * 32 +: 32] = base + step * t;
            instr_payload[`TENSORLSU_INSTR_STRIDE_OFFSET +: `TENSORLSU_INSTR_STRIDE_WIDTH] = stride;
            instr_payload[`TENSORLSU_INSTR_SPACE_OFFSET +: `TENSORLSU_INSTR_SPACE_WIDTH] = space;
            instr_valid = 1;
            @(posedge clk);
            while (!instr_ready) @(posedge clk);
            @(negedge clk) instr_valid = 0;
        end
    endtask

    // stmatrix source register r of thread t: two elements 0x1000 (r + 1) + 2t and + 1
    task put_store(input integer reg_index);
        begin
            @(negedge clk);
            for (t = 0; t < 32; t = t + 1)
                store_payload[t * 32 +: 32] = {16'(16'h1000 * (reg_index + 1) + 2 * t + 1),
                                               16'(16'h1000 * (reg_index + 1) + 2 * t)};
            store_valid = 1;
            @(posedge clk);
            while (!store_ready) @(posedge clk);
            @(negedge clk) store_valid = 0;
        end
    endtask

    // a result beat's fields, as taken (held by the unit until ready)
    reg [`TENSORLSU_RESULT_WIDTH-1:0] beat;
    task take_beat;
        begin
            @(negedge clk) result_ready = 1;
            @(posedge clk);
            while (!result_valid) @(posedge clk);
            beat = result_payload;
            @(negedge clk) result_ready = 0;
        end
    endtask

    // a Tensor Memory instruction of .32x32b.x2 (store or load) on quadrant 1's port
    task put_tmem(input store, input [31:0] taddr);
        begin
            @(negedge clk);
            tm_instr_payload = 0;
            tm_instr_payload[`TENSORLSU_TMEM_INSTR_STORE_OFFSET] = store;
            tm_instr_payload[`TENSORLSU_TMEM_INSTR_SHAPE_ID_OFFSET +: `TENSORLSU_TMEM_INSTR_SHAPE_ID_WIDTH] =
                `TENSORLSU_TMEM_SHAPE_32X32B;
            tm_instr_payload[`TENSORLSU_TMEM_INSTR_NUM_LOG2_OFFSET +: `TENSORLSU_TMEM_INSTR_NUM_LOG2_WIDTH] = 1;
            tm_instr_payload[`TENSORLSU_TMEM_INSTR_TADDR_OFFSET +: 32] = taddr;
            tm_instr_payload[`TENSORLSU_TMEM_INSTR_WARP_OFFSET +: `TENSORLSU_TMEM_INSTR_WARP_WIDTH] = 1;
            tm_instr_valid = 1;
            @(posedge clk);
            while (!tm_instr_ready) @(posedge clk);
            @(negedge clk) tm_instr_valid = 0;
        end
    endtask

    reg [`TENSORLSU_TMEM_RESULT_WIDTH-1:0] tbeat;
    task take_tmem_beat;
        begin
            @(negedge clk) tm_result_ready = 1;
            @(posedge clk);
            while (!tm_result_valid) @(posedge clk);
            tbeat = tm_result_payload;
            @(negedge clk) tm_result_ready = 0;
        end
    endtask

    task check(input [255:0] what, input [31:0] w, input [31:0] g);
        if (w !== g) begin
            errors = errors + 1;
            $display("FAIL %0s: expected %h, got %h", what, w, g);
        end
    endtask

    // an stmatrix .m8n8.x2 of rows base + 32 t, its two source beats (registers first_reg and
    // first_reg + 1 of put_store), sent whatever its verdict; its completion beat's error
    task stmatrix_x2(input [31:0] base, input integer first_reg, input [31:0] want_error);
        begin
            put_instr(`TENSORLSU_FORM_STMATRIX_M8N8_X2_B16, base, 32);
            put_store(first_reg);
            put_store(first_reg + 1);
            take_beat;
            check("stmatrix.x2 error", want_error, beat[`TENSORLSU_RESULT_ERROR_OFFSET +: `TENSORLSU_RESULT_ERROR_WIDTH]);
            check("stmatrix.x2 last", 1, beat[`TENSORLSU_RESULT_LAST_OFFSET]);
        end
    endtask

    initial begin
        repeat (2) @(posedge clk);
        @(negedge clk) rst = 0;

        // fill: the 16-bit element at byte address a holds a / 2
        for (line = 0; line < `TENSORLSU_LINES; line = line + 1) begin
            @(negedge clk);
            fill_payload[`TENSORLSU_FILL_LINE_OFFSET +: `TENSORLSU_FILL_LINE_WIDTH] = line;
            for (j = 0; j < `TENSORLSU_LINE_BYTES / 2; j = j + 1)
                fill_payload[`TENSORLSU_FILL_DATA_OFFSET + 16 * j +: 16] = line * (`TENSORLSU_LINE_BYTES / 2) + j;
            fill_valid = 1;
            @(posedge clk);
            while (!fill_ready) @(posedge clk);
        end
        @(negedge clk) fill_valid = 0;

        // ldmatrix .x4 .trans: thread i gives row address 16 i (matrix i / 8, row i mod 8);
        // element (m, row k, column j) holds 8 (8m + k) + j
        put_instr(`TENSORLSU_FORM_LDMATRIX_M8N8_X4_TRANS_B16, 0, 16);
        for (r = 0; r < 4; r = r + 1) begin
            take_beat;
            check("ldmatrix.x4.trans error", `TENSORLSU_ERROR_NONE,
                  beat[`TENSORLSU_RESULT_ERROR_OFFSET +: `TENSORLSU_RESULT_ERROR_WIDTH]);
            check("ldmatrix.x4.trans last", r == 3, beat[`TENSORLSU_RESULT_LAST_OFFSET]);
            for (t = 0; t < 32; t = t + 1) begin
                want = {16'(8 * (8 * r + 2 * (t % 4) + 1) + t / 4), 16'(8 * (8 * r + 2 * (t % 4)) + t / 4)};
                check("ldmatrix.x4.trans register", want, beat[`TENSORLSU_RESULT_DATA_OFFSET + 32 * t +: 32]);
            end
        end
        // rows 0..31: each matrix has one row in each of the 8 quads -> 1 cycle a matrix
        check("ldmatrix.x4.trans cycles", 4, beat[`TENSORLSU_RESULT_CYCLES_OFFSET +: `TENSORLSU_RESULT_CYCLES_WIDTH]);

        // a refused stmatrix (thread 0's row 0x808 is not 16-byte aligned): its producer sends
        // its two source beats as for any stmatrix; the unit takes and drops them, writes
        // nothing, and the next stmatrix gets its own beats
        stmatrix_x2(32'h808, 2, `TENSORLSU_ERROR_MISALIGNED);

        // stmatrix .x2 to every other row from 0x800: thread i's row 0x800 + 32 i; matrix r row
        // k then holds 0x1000 (r + 1) + 8k + j in element j
        stmatrix_x2(32'h800, 0, `TENSORLSU_ERROR_NONE);
        // rows 0x80 + 2i: quads 0, 2, 4, 6 twice per matrix -> 2 cycles a matrix
        check("stmatrix.x2 cycles", 4, beat[`TENSORLSU_RESULT_CYCLES_OFFSET +: `TENSORLSU_RESULT_CYCLES_WIDTH]);

        // read them back: ldmatrix .x2 of the same rows gives the stored registers
        put_instr(`TENSORLSU_FORM_LDMATRIX_M8N8_X2_B16, 32'h800, 32);
        for (r = 0; r < 2; r = r + 1) begin
            take_beat;
            for (t = 0; t < 32; t = t + 1) begin
                want = {16'(16'h1000 * (r + 1) + 2 * t + 1), 16'(16'h1000 * (r + 1) + 2 * t)};
                check("ldmatrix.x2 after stmatrix", want, beat[`TENSORLSU_RESULT_DATA_OFFSET + 32 * t +: 32]);
            end
        end

        // dump line 16 (0x800): 16-byte rows 0, 2, 4, 6 were stored (matrix 0 rows 0..3), the
        // odd ones keep the fill (a / 2)
        @(negedge clk);
        dump_req_payload = 16;
        dump_req_valid = 1;
        @(posedge clk);
        while (!dump_req_ready) @(posedge clk);
        @(negedge clk) begin dump_req_valid = 0; dump_ready = 1; end
        @(posedge clk);
        while (!dump_valid) @(posedge clk);
        for (j = 0; j < 64; j = j + 1) begin
            half = dump_payload[16 * j +: 16];
            if ((j / 8) % 2 == 0)
                want = 16'h1000 + 8 * ((j / 8) / 2) + j % 8;
            else
                want = (32'h800 + 2 * j) / 2;
            check("dumped element", want, {16'h0, half});
        end
        @(negedge clk) dump_ready = 0;

        // Tensor Memory: store register r of thread t = 0xA000_0000 + 256 r + t at lane 32 + t,
        // column 5 + r, then load it back
        // (one beat of the store port carries both registers, register 0 in its low half)
        put_tmem(1, {16'd32, 16'd5});
        @(negedge clk);
        for (r = 0; r < 2; r = r + 1)
            for (t = 0; t < 32; t = t + 1)
                tm_store_payload[1024 * r + t * 32 +: 32] = 32'hA000_0000 + 256 * r + t;
        tm_store_valid = 1;
        @(posedge clk);
        while (!tm_store_ready) @(posedge clk);
        @(negedge clk) tm_store_valid = 0;
        take_tmem_beat;
        check("tcgen05.st kind", `TENSORLSU_TMEM_KIND_DONE,
              tbeat[`TENSORLSU_TMEM_RESULT_KIND_OFFSET +: `TENSORLSU_TMEM_RESULT_KIND_WIDTH]);
        check("tcgen05.st error", `TENSORLSU_ERROR_NONE,
              tbeat[`TENSORLSU_TMEM_RESULT_ERROR_OFFSET +: `TENSORLSU_TMEM_RESULT_ERROR_WIDTH]);
        put_tmem(0, {16'd32, 16'd5});
        take_tmem_beat;       // both registers in one beat (two = 1, reg 0, reg2 1)
        check("tcgen05.ld two", 1, tbeat[`TENSORLSU_TMEM_RESULT_TWO_OFFSET]);
        check("tcgen05.ld last", 1, tbeat[`TENSORLSU_TMEM_RESULT_LAST_OFFSET]);
        for (r = 0; r < 2; r = r + 1)
            for (t = 0; t < 32; t = t + 1)
                check("tcgen05.ld register", 32'hA000_0000 + 256 * r + t,
                      tbeat[(r == 0 ? `TENSORLSU_TMEM_RESULT_DATA_0_OFFSET : `TENSORLSU_TMEM_RESULT_DATA_1_OFFSET)
                            + 32 * t +: 32]);
        // lane 0 is quadrant 0's: warp 1 is refused, with one beat
        put_tmem(0, {16'd0, 16'd5});
        take_tmem_beat;
        check("tcgen05.ld refusal", `TENSORLSU_ERROR_QUADRANT,
              tbeat[`TENSORLSU_TMEM_RESULT_ERROR_OFFSET +: `TENSORLSU_TMEM_RESULT_ERROR_WIDTH]);
        check("tcgen05.ld refusal last", 1, tbeat[`TENSORLSU_TMEM_RESULT_LAST_OFFSET]);

        // wmma.load .c .f32 from global memory: 8 beats, one register each (the beat's regs mask)
        put_wmma(`TENSORLSU_FORM_WMMA_LOAD_C_ROW_M16N16K16_F32, 32'h10000, 0, 16, `TENSORLSU_SPACE_GLOBAL);
        for (j = 0; j < 8; j = j + 1) begin
            take_beat;
            check("global wmma.load error", `TENSORLSU_ERROR_NONE,
                  beat[`TENSORLSU_RESULT_ERROR_OFFSET +: `TENSORLSU_RESULT_ERROR_WIDTH]);
            check("global wmma.load last", j == 7, beat[`TENSORLSU_RESULT_LAST_OFFSET]);
            r = -1;
            for (line = 0; line < 8; line = line + 1)
                if (beat[`TENSORLSU_RESULT_REGS_OFFSET + line]) r = line;
            check("global wmma.load regs", 32'd1 << r, beat[`TENSORLSU_RESULT_REGS_OFFSET +: 8]);
            for (t = 0; t < 32; t = t + 1) begin
                want = 32'h10000 / 4 + 16 * (t / 4 + 8 * ((r / 2) % 2)) + 2 * (t % 4) + r % 2 + 8 * (r / 4);
                check("global wmma.load register", want, beat[`TENSORLSU_RESULT_DATA_OFFSET + 32 * t +: 32]);
            end
        end

        if (errors == 0) $display("PASS");
        else $display("FAIL: %0d mismatches", errors);
        $finish;
    end

    initial begin
        #200000;
        $display("FAIL: timeout");
        $finish;
    end
endmodule
