#include <string>

namespace app {
namespace ui {

/// A widget on screen.
class Widget : public Base {
public:
    Widget(int w);
    ~Widget();

    /// Draws it.
    void draw() const {
        render("{");
    }

private:
    int width_;
};

}  // namespace ui

/// Out-of-class definition.
void ui::Widget::resize(int w) {
    width_ = w;
}

template <typename T>
struct Stack {
    std::vector<T> items;
    void push(T item) { items.push_back(item); }
};

}  // namespace app

int main() {
    return 0;
}
