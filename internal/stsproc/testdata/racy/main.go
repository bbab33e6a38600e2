// Command racy has a data race on purpose: TestADataRaceFailsTheTest runs it, built as Build
// builds sts under go test -race, to show that a server's race fails the test that started it.
package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	var n int
	done := make(chan bool)
	go func() {
		n++ // written here and below with nothing ordering the two
		done <- true
	}()
	n++
	<-done
	fmt.Println("racy: counted", n)
	if len(os.Args) > 1 && os.Args[1] == "wait" {
		time.Sleep(time.Hour)
	}
}
