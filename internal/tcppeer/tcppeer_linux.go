package tcppeer

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
)

// procRoot is where the kernel lists its TCP sockets.
const procRoot = "/proc/net/"

func lookup(local, remote *net.TCPAddr) (int, bool) {
	c4, s4 := remote.IP.To4(), local.IP.To4()
	if c4 != nil && s4 != nil {
		// An IPv4 client is listed in tcp, even when a dual-stack
		// listener sees it as ::ffff:127.0.0.1.
		if uid, ok := search("tcp", c4, remote.Port, s4, local.Port); ok {
			return uid, true
		}
	}
	c16, s16 := remote.IP.To16(), local.IP.To16()
	if c16 == nil || s16 == nil {
		return 0, false
	}
	return search("tcp6", c16, remote.Port, s16, local.Port)
}

// search finds the client's end in a table: the line whose
// "local_address rem_address" are the client's and the server's, as the
// kernel prints them (each 32-bit word of an address in the machine's byte
// order, the port big-endian).
func search(table string, client net.IP, cport int, server net.IP, sport int) (int, bool) {
	f, err := os.Open(procRoot + table)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	return find(f, []byte(hexAddr(client, cport)+" "+hexAddr(server, sport)))
}

func hexAddr(ip net.IP, port int) string {
	var b []byte
	for i := 0; i < len(ip); i += 4 {
		b = fmt.Appendf(b, "%08X", binary.NativeEndian.Uint32(ip[i:i+4]))
	}
	return fmt.Sprintf("%s:%04X", b, port)
}

// find scans a table for the line whose addresses are want and returns
// its uid column. A line: "sl local rem st tx:rx tr:when retrnsmt uid ...".
func find(f *os.File, want []byte) (int, bool) {
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 512), 4096)
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 8 {
			continue
		}
		if len(fields[1])+1+len(fields[2]) != len(want) || !bytes.HasPrefix(want, fields[1]) || !bytes.Equal(want[len(fields[1])+1:], fields[2]) {
			continue
		}
		uid, err := strconv.Atoi(string(fields[7]))
		return uid, err == nil
	}
	return 0, false
}
