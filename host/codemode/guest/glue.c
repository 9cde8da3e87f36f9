/*
 * glue.c: the code-mode guest around QuickJS (quickjs.wasm; build.sh
 * builds it). It runs one script and nothing else: QuickJS's standard
 * library with its std and os modules (quickjs-libc.c, where files,
 * processes and timers live) is not linked, so the script's only way out
 * is the one host function below.
 *
 * ABI (module "mcphost"; every pointer is into this module's memory):
 *   call_tool(name, name_len, args, args_len) -> answer_len
 *       calls a tool by its exposed name with JSON arguments; the host
 *       keeps the answer (JSON text) for take_answer; a negative length
 *       means the host refused to answer (the run is being ended).
 *   take_answer(buf, len)
 *       copies the kept answer (len bytes, as call_tool said) to buf.
 *   done(status, buf, len)
 *       the run's report: status 0 is the JSON text that the prelude's
 *       __mcphost_report() made; status 1 is an exception's text (a
 *       syntax error in the script, say).
 * Exports: alloc(n) -> ptr, and run(prelude, prelude_len, src, src_len,
 * memory_limit) -> status, which evaluates the prelude ("prelude.js"),
 * then the script ("script.js"), then runs their jobs until none is
 * left; both texts are NUL-terminated (text[len] == 0), as JS_Eval
 * requires. A status of -1 means QuickJS could not start (out of memory).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quickjs.h"

#define IMPORT(name) __attribute__((import_module("mcphost"), import_name(name)))
#define EXPORT(name) __attribute__((export_name(name)))

IMPORT("call_tool") extern int32_t host_call_tool(const char *name, int32_t name_len, const char *args, int32_t args_len);
IMPORT("take_answer") extern void host_take_answer(char *buf, int32_t len);
IMPORT("done") extern void host_done(int32_t status, const char *buf, int32_t len);

/* The JavaScript stack QuickJS allows itself; the linker gives the
 * shadow stack 1 MiB (build.sh), below the data (--stack-first), so an
 * overflow past both traps instead of writing over the heap. */
#define JS_STACK_LIMIT (512 * 1024)

EXPORT("alloc") void *mcphost_alloc(int32_t n) { return malloc((size_t)n); }

static JSValue js_call(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    size_t nlen, alen;
    const char *name, *args;
    int32_t n;
    char *buf;
    JSValue s;

    if (argc < 2)
        return JS_ThrowTypeError(ctx, "call takes a name and JSON arguments");
    name = JS_ToCStringLen(ctx, &nlen, argv[0]);
    if (!name)
        return JS_EXCEPTION;
    args = JS_ToCStringLen(ctx, &alen, argv[1]);
    if (!args) {
        JS_FreeCString(ctx, name);
        return JS_EXCEPTION;
    }
    n = host_call_tool(name, (int32_t)nlen, args, (int32_t)alen);
    JS_FreeCString(ctx, name);
    JS_FreeCString(ctx, args);
    if (n < 0)
        return JS_ThrowInternalError(ctx, "the host refused the call");
    buf = js_malloc(ctx, (size_t)n + 1);
    if (!buf)
        return JS_EXCEPTION;
    host_take_answer(buf, n);
    s = JS_NewStringLen(ctx, buf, (size_t)n);
    js_free(ctx, buf);
    return s;
}

/* report_exception hands the host the text of the pending exception. */
static int32_t report_exception(JSContext *ctx)
{
    JSValue e = JS_GetException(ctx);
    const char *s = JS_ToCString(ctx, e);
    if (!s) {
        static const char oom[] = "the script's exception could not be read (out of memory)";
        host_done(1, oom, sizeof(oom) - 1);
    } else {
        host_done(1, s, (int32_t)strlen(s));
    }
    return 1;
}

EXPORT("run") int32_t run(const char *prelude, int32_t prelude_len, const char *src, int32_t len, int32_t memory_limit)
{
    static const char report[] = "__mcphost_report()";
    JSRuntime *rt;
    JSContext *ctx, *jctx;
    JSValue global, v;
    const char *s;
    size_t slen;

    rt = JS_NewRuntime();
    if (!rt)
        return -1;
    JS_SetMemoryLimit(rt, (size_t)memory_limit);
    JS_SetMaxStackSize(rt, JS_STACK_LIMIT);
    ctx = JS_NewContext(rt);
    if (!ctx)
        return -1;
    global = JS_GetGlobalObject(ctx);
    JS_SetPropertyStr(ctx, global, "__mcphost_call", JS_NewCFunction(ctx, js_call, "call", 2));
    JS_FreeValue(ctx, global);

    v = JS_Eval(ctx, prelude, (size_t)prelude_len, "prelude.js", JS_EVAL_TYPE_GLOBAL);
    if (JS_IsException(v))
        return report_exception(ctx);
    JS_FreeValue(ctx, v);
    v = JS_Eval(ctx, src, (size_t)len, "script.js", JS_EVAL_TYPE_GLOBAL);
    if (JS_IsException(v))
        return report_exception(ctx);
    JS_FreeValue(ctx, v);
    /* The script is an async function: run its jobs until it settles.
     * A failing job is the script's failure, which the prelude's handler
     * on its promise records. */
    for (;;) {
        int r = JS_ExecutePendingJob(rt, &jctx);
        if (r == 0)
            break;
        if (r < 0)
            JS_FreeValue(jctx, JS_GetException(jctx));
    }
    v = JS_Eval(ctx, report, sizeof(report) - 1, "report.js", JS_EVAL_TYPE_GLOBAL);
    if (JS_IsException(v))
        return report_exception(ctx);
    s = JS_ToCStringLen(ctx, &slen, v);
    if (!s)
        return report_exception(ctx);
    host_done(0, s, (int32_t)slen);
    /* The instance is thrown away after one run: nothing is freed. */
    return 0;
}
