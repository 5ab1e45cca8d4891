package server

import (
	"net/http"
	"time"
)

// Server serves the search API.
type Server struct {
	Addr    string
	Timeout time.Duration
}

// NewServer returns a server with sane timeouts.
func NewServer(addr string) *Server {
	return &Server{Addr: addr, Timeout: 10 * time.Second}
}

// ListenAndServe starts serving until the process is stopped.
func (s *Server) ListenAndServe(h http.Handler) error {
	srv := &http.Server{Addr: s.Addr, Handler: h, ReadTimeout: s.Timeout}
	return srv.ListenAndServe()
}
