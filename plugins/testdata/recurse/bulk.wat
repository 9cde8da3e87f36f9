;; A plugin whose tool_call loops over bulk memory instructions: 16000
;; iterations of a 33 MB memory.fill, about 13 s of work in 16000 loop
;; iterations, so counting one per iteration let it run far past its
;; timeout. The host's rewriter counts bulk instructions by their size
;; (plugins/instrument.go), and stops it within milliseconds.
;;
;; Rebuild the .wasm beside it with: wat2wasm bulk.wat -o bulk.wasm
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "length" (func $length (param i64) (result i64)))
  (memory 512) ;; 32 MiB, under the default cap
  (data (i32.const 0) "{\"abi\":\"1.1\",\"name\":\"bulk\",\"version\":\"1\",\"hooks\":[\"tool_call\"]}")
  (data (i32.const 256) "{\"action\":\"allow\"}")

  ;; out sets the output to len bytes of memory at ptr.
  (func $out (param $ptr i32) (param $len i32)
    (local $off i64) (local $i i32)
    (local.set $off (call $alloc (i64.extend_i32_u (local.get $len))))
    (block $done
      (loop $copy
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (call $store_u8 (i64.add (local.get $off) (i64.extend_i32_u (local.get $i)))
                        (i32.load8_u (i32.add (local.get $ptr) (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $copy)))
    (call $output_set (local.get $off) (i64.extend_i32_u (local.get $len))))

  (func (export "mcphost_describe") (result i32)
    (call $out (i32.const 0) (i32.const 63))
    (i32.const 0))

  (func (export "mcphost_tool_call") (result i32)
    (local $i i32)
    (loop $fill
      (memory.fill (i32.const 1024) (i32.const 0) (i32.const 33000000))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $fill (i32.lt_u (local.get $i) (i32.const 16000))))
    (call $out (i32.const 256) (i32.const 18))
    (i32.const 0)))
