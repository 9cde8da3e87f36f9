;; recurse.wat without the extism:host/env length import, which the host's
;; rewriter needs: the rewriter refuses this module, and the host runs it
;; under wazero's close-on-context-done and a check at every function entry
;; (plugins/guard.go).
;;
;; Rebuild the .wasm beside it with: wat2wasm recurse-nolength.wat -o recurse-nolength.wasm
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory 1)
  (data (i32.const 0) "{\"abi\":\"1.1\",\"name\":\"recurse\",\"version\":\"1\",\"hooks\":[\"tool_call\"]}")
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

  (func $fib (param $n i64) (result i64)
    (if (result i64) (i64.lt_u (local.get $n) (i64.const 2))
      (then (local.get $n))
      (else (i64.add (call $fib (i64.sub (local.get $n) (i64.const 1)))
                     (call $fib (i64.sub (local.get $n) (i64.const 2)))))))

  (func (export "mcphost_describe") (result i32)
    (call $out (i32.const 0) (i32.const 66))
    (i32.const 0))

  (func (export "mcphost_tool_call") (result i32)
    (drop (call $fib (i64.const 60)))
    (call $out (i32.const 256) (i32.const 18))
    (i32.const 0)))
