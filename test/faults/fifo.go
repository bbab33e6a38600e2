package faults

import (
	"fmt"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// The FIFO model: the list as one string, its lines in order, each ended by "\n" (an empty
// string is the empty list), so that states compare with == and need no copying.
type (
	fifoInput struct {
		add   bool   // ADD ADD_MODE=LAST of line; else READ READ_MODE=FIRST KEEP=FALSE
		drain bool   // EXPORT at the end: the list's lines
		line  string // add's
	}
	fifoOutput struct {
		unknown bool   // never answered: it may or may not have taken effect
		failed  bool   // refused without effect (anything but OK, or an empty list for a read)
		empty   bool   // a read of an empty or unknown list
		value   string // a read's line
		lines   string // a drain's, in the state's form
	}
)

// FIFOModel is READ FIRST KEEP=FALSE and ADD LAST on one list: a FIFO queue.
var FIFOModel = porcupine.Model{
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(string), input.(fifoInput), output.(fifoOutput)
		switch {
		case in.drain:
			return s == out.lines, s
		case out.failed:
			return true, s
		case in.add:
			return true, s + in.line + "\n"
		case out.unknown:
			_, rest, _ := strings.Cut(s, "\n")
			return true, rest
		case out.empty:
			return s == "", s
		}
		first, rest, _ := strings.Cut(s, "\n")
		return s != "" && first == out.value, rest
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(fifoInput), output.(fifoOutput)
		result := ""
		switch {
		case out.unknown:
			result = "?"
		case out.failed:
			result = "refused"
		case out.empty:
			result = "empty"
		case in.drain:
			result = fmt.Sprintf("%q", strings.Split(strings.TrimSuffix(out.lines, "\n"), "\n"))
		case !in.add:
			result = out.value
		default:
			result = "ok"
		}
		switch {
		case in.drain:
			return "EXPORT → " + result
		case in.add:
			return fmt.Sprintf("ADD %s → %s", in.line, result)
		}
		return "READ → " + result
	},
	DescribeState: func(state any) string {
		return "[" + strings.ReplaceAll(strings.TrimSuffix(state.(string), "\n"), "\n", " ") + "]"
	},
}

// FIFOHistory turns the READ FIRST and ADD LAST operations on one list, and the list's lines at
// the end (final), into a Porcupine history. As in Jepsen, an operation never answered gets an
// unknown output and stays open to the end: after the final EXPORT, so that it may have taken
// effect before it or not at all.
func FIFOHistory(ops []*Op, final []string) []porcupine.Operation {
	var history []porcupine.Operation
	end, clients := time.Duration(0), 0
	for _, op := range ops {
		end = max(end, op.Call, op.Return)
		clients = max(clients, op.Client+1)
	}
	for _, op := range ops {
		in := fifoInput{add: op.Kind == Add, line: op.Line}
		if op.Kind != Add && op.Kind != Read {
			continue
		}
		var out fifoOutput
		ret := op.Return
		a := op.Answer()
		switch {
		case a == nil:
			out.unknown, ret = true, end+2
		case a.OK() && op.Kind == Add:
		case a.OK():
			out.value, _ = a.Value()
		case a.Status == 404 && (a.Reason() == "empty" || a.Reason() == "not_loaded") && op.Kind == Read:
			out.empty = true
		default:
			out.failed = true
		}
		history = append(history, porcupine.Operation{ClientId: op.Client, Input: in, Call: int64(op.Call), Output: out, Return: int64(ret), Metadata: op.ID})
	}
	var lines strings.Builder
	for _, l := range final {
		lines.WriteString(l + "\n")
	}
	return append(history, porcupine.Operation{ClientId: clients, Input: fifoInput{drain: true},
		Call: int64(end + 1), Output: fifoOutput{lines: lines.String()}, Return: int64(end + 1), Metadata: "final EXPORT"})
}

// CheckFIFO checks that history is linearizable as a FIFO queue, within timeout (Porcupine's
// search can take exponential time: a timeout is porcupine.Unknown). For an illegal history it
// writes Porcupine's visualization to htmlPath, if given.
func CheckFIFO(history []porcupine.Operation, timeout time.Duration, htmlPath string) (porcupine.CheckResult, error) {
	result, info := porcupine.CheckOperationsVerbose(FIFOModel, history, timeout)
	if result == porcupine.Illegal && htmlPath != "" {
		return result, porcupine.VisualizePath(FIFOModel, info, htmlPath)
	}
	return result, nil
}
