package extismhost

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// WASI errnos (wasi_snapshot_preview1's numbering, which Go's wasip1
// syscall package and wasi-libc share).
const (
	wasiErrnoIO    = 29
	wasiErrnoMFILE = 33 // "too many open files"
)

// instantiateWASI instantiates wazero's WASI with one change: path_open
// answers EMFILE when a grant refused the file because the instance holds
// rootfs.MaxOpenFiles already (plugins/internal/rootfs). The errnos a wazero FS may return
// have no EMFILE and wazero turns an unknown one into EIO, which would
// read to the guest as a failing disk; so the grant answers EIO and notes
// the refusal on the instance's count, and the wrapper turns that EIO
// into EMFILE.
func instantiateWASI(ctx context.Context, r wazero.Runtime) error {
	b := r.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	cm, err := b.Compile(ctx)
	if err != nil {
		return err
	}
	defer cm.Close(ctx)
	def := cm.ExportedFunctions()["path_open"]
	if def == nil {
		return fmt.Errorf("extismhost: wazero's WASI has no path_open")
	}
	pathOpen, ok := def.GoFunction().(api.GoModuleFunction)
	if !ok {
		return fmt.Errorf("extismhost: wazero's path_open is a %T, not a GoModuleFunction", def.GoFunction())
	}
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
			k, _ := ctx.Value(kernelKey{}).(*Kernel)
			if k == nil || k.files == nil {
				pathOpen.Call(ctx, mod, stack)
				return
			}
			k.files.ClearRefusal()
			pathOpen.Call(ctx, mod, stack)
			if k.files.TakeRefusal() && stack[0] == wasiErrnoIO {
				stack[0] = wasiErrnoMFILE
			}
		}), def.ParamTypes(), def.ResultTypes()).
		WithName(def.Name()).
		WithParameterNames(def.ParamNames()...).
		WithResultNames(def.ResultNames()...).
		Export("path_open")
	_, err = b.Instantiate(ctx)
	return err
}
