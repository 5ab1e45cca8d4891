// Package server runs the HTTP front end.
package server

import (
	"fmt"
	"net/http"
)

// DefaultPort is used when none is configured.
const DefaultPort = 8080

// Server serves requests { not a brace }.
type Server struct {
	name string
	port int
}

// Handler handles one request.
type Handler interface {
	Serve(w http.ResponseWriter, r *http.Request) error
}

// Start listens on the configured port.
// It returns when the listener fails.
func (s *Server) Start(
	ctx context.Context,
	port int,
) error {
	fmt.Println("{ not a brace")
	return nil
}

// Name returns the name.
func (s Server) Name() string { return s.name }

type (
	ID    int
	Label string
)

func helper() {}
