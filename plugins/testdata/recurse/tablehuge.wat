;; A plugin that declares a table of 10^8 entries, which instantiation
;; would allocate (800 MB in wazero). The host refuses any table that
;; starts above 2^20 entries when it loads the module (plugins/loadcheck.go).
;;
;; Rebuild the .wasm beside it with: wat2wasm tablehuge.wat -o tablehuge.wasm
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "length" (func $length (param i64) (result i64)))
  (memory 1)
  (table 100000000 funcref)
  (data (i32.const 0) "{\"abi\":\"1.1\",\"name\":\"tablehuge\",\"version\":\"1\",\"hooks\":[\"tool_call\"]}")

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
    (call $out (i32.const 0) (i32.const 68))
    (i32.const 0))

  (func (export "mcphost_tool_call") (result i32)
    (i32.const 0)))
