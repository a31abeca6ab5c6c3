package ui

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"html"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/orion-agent/orion/internal/httpguard"
)

// HeaderPageKey carries a tab's page key on every /api request.
const HeaderPageKey = "X-Orion-Page-Key"

// Bounds on the secrets the server holds.
const (
	// maxLinks bounds the one-time links not yet used.
	maxLinks = 16
	// maxKeys bounds the page keys handed out (one per link used): the
	// oldest goes first, so a 65th tab costs the first one its key.
	maxKeys = 64
)

// access holds the page's three secrets, each with its own job, so that
// none is enough on its own and the one a browser leaks is worth nothing:
//
//   - a link token, in the URL printed or opened, used once: the first
//     request that brings it is answered with the cookie and a page key,
//     and it is then forgotten, so a copy read later (terminal
//     scrollback, browser history) opens nothing;
//   - the cookie's secret, random and never in a URL: HttpOnly and
//     SameSite=Strict, but a browser sends cookies to every port of
//     127.0.0.1, so another local listener the person visits receives it;
//   - a page key, handed to the tab in the redirect's URL fragment
//     (/#k=KEY), which no browser sends to any server, and kept by the
//     page in sessionStorage, which is per origin (port included); every
//     /api request carries it in X-Orion-Page-Key.
//
// /api requests need the cookie and a page key; the page's static files
// (no secret in them) need the cookie.
type access struct {
	cookieName string
	cookie     [sha256.Size]byte
	cookieVal  string

	mu    sync.Mutex
	links [][sha256.Size]byte // one-time link tokens, oldest first
	keys  [][sha256.Size]byte // page keys handed out, oldest first
}

func newAccess(cookieName string) *access {
	v := httpguard.NewToken()
	return &access{cookieName: cookieName, cookieVal: v, cookie: sha256.Sum256([]byte(v))}
}

// newLink adds a one-time link token and returns it.
func (a *access) newLink() string {
	tok := httpguard.NewToken()
	a.addLink(tok)
	return tok
}

func (a *access) addLink(tok string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.links = append(a.links, sha256.Sum256([]byte(tok)))
	if len(a.links) > maxLinks {
		a.links = a.links[len(a.links)-maxLinks:]
	}
}

// useLink reports whether tok is an unused link token, and forgets it.
func (a *access) useLink(tok string) bool {
	h := sha256.Sum256([]byte(tok))
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, l := range a.links {
		if subtle.ConstantTimeCompare(h[:], l[:]) == 1 {
			a.links = append(a.links[:i], a.links[i+1:]...)
			return true
		}
	}
	return false
}

// newKey hands out a page key.
func (a *access) newKey() string {
	k := httpguard.NewToken()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.keys = append(a.keys, sha256.Sum256([]byte(k)))
	if len(a.keys) > maxKeys {
		a.keys = a.keys[len(a.keys)-maxKeys:]
	}
	return k
}

func (a *access) hasCookie(r *http.Request) bool {
	c, err := r.Cookie(a.cookieName)
	if err != nil {
		return false
	}
	h := sha256.Sum256([]byte(c.Value))
	return subtle.ConstantTimeCompare(h[:], a.cookie[:]) == 1
}

func (a *access) hasKey(r *http.Request) bool {
	k := r.Header.Get(HeaderPageKey)
	if k == "" {
		return false
	}
	h := sha256.Sum256([]byte(k))
	a.mu.Lock()
	defer a.mu.Unlock()
	ok := 0
	for _, x := range a.keys {
		ok |= subtle.ConstantTimeCompare(h[:], x[:])
	}
	return ok == 1
}

func (a *access) setCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: a.cookieName, Value: a.cookieVal, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
}

// localPath is where a link's redirect goes: rest (what followed the
// token) cleaned into one path of this server. path.Clean of "/" + rest
// starts with exactly one slash, so "//evil.example" (a URL of another
// host, to a browser) becomes "/evil.example".
func localPath(rest string) string {
	p := path.Clean("/" + rest)
	// Browsers read a backslash as "/" and drop tabs and newlines from URLs, so
	// anything but plain path characters goes home instead.
	for _, c := range []byte(p) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("/._~-", c) >= 0) {
			return "/"
		}
	}
	if strings.HasPrefix(p, "//") {
		return "/"
	}
	if strings.HasSuffix(rest, "/") && p != "/" {
		p += "/"
	}
	return p
}

// refuse answers a request that lacks a secret, saying what to do.
func refuse(w http.ResponseWriter, msg string) {
	(&httpguard.Refusal{Status: http.StatusForbidden, Check: httpguard.CheckToken, Message: msg}).Write(w)
}

// refusePage answers a page a person opened without a secret that works
// (a used link, no cookie) with a sentence in HTML saying what to do;
// /api requests, which the page's script makes, get refuse's JSON. (No
// style: the page's policy allows no inline one, and its stylesheet needs
// the cookie.)
func refusePage(w http.ResponseWriter, title, text string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Should-Retry", "false")
	w.WriteHeader(http.StatusForbidden)
	fmt.Fprintf(w, "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>Orion: %s</title>"+
		"<h1>%s</h1><p>%s</p></html>\n", html.EscapeString(title), html.EscapeString(title), html.EscapeString(text))
}
