require "json"

# Billing helpers.
module Billing
  # An invoice { not a brace }.
  class Invoice < Base
    attr_reader :lines

    # Builds an invoice.
    def initialize(lines)
      @lines = lines
    end

    # The total.
    def total
      lines.sum(&:price)
    end

    def self.load(path)
      new(JSON.parse(File.read(path)))
    end
  end

  def self.version
    "1.0"
  end
end

def main
  puts Billing.version
end

main if __FILE__ == $PROGRAM_NAME
