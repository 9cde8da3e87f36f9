;; A plugin whose tool_call grows its table by 2^22 entries eight times:
;; 256 MiB of references in the host (wazero keeps 8 bytes per entry, in a
;; Go slice outside the guest's capped linear memory). The host caps every
;; table at 2^20 entries (plugins/loadcheck.go), so each table.grow returns
;; -1; if one succeeds, tool_call returns 1 after growing them all.
;;
;; Rebuild the .wasm beside it with: wat2wasm tablegrow.wat -o tablegrow.wasm
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "length" (func $length (param i64) (result i64)))
  (memory 1)
  (table $t 1 externref)
  (data (i32.const 0) "{\"abi\":\"1.1\",\"name\":\"tablegrow\",\"version\":\"1\",\"hooks\":[\"tool_call\"]}")
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
    (call $out (i32.const 0) (i32.const 68))
    (i32.const 0))

  (func (export "mcphost_tool_call") (result i32)
    (local $i i32) (local $grew i32)
    (loop $grow
      (if (i32.ne (table.grow $t (ref.null extern) (i32.const 4194304)) (i32.const -1))
        (then (local.set $grew (i32.const 1))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $grow (i32.lt_u (local.get $i) (i32.const 8))))
    (call $out (i32.const 256) (i32.const 18))
    (local.get $grew)))
